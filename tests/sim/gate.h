/* SPDX-License-Identifier: Apache-2.0
 *
 * Gates for the simulated-GPU tests (test-only): a host function (gate_wait, queued with
 * cuLaunchHostFunc) that blocks its stream until the test opens the gate, so a test holds
 * work queued and observes what the driver does meanwhile.
 */
#ifndef TF_TESTS_SIM_GATE_H
#define TF_TESTS_SIM_GATE_H

#include <cuda.h>
#include <pthread.h>
#include <time.h>

struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
};

static inline void gate_init(struct gate *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->open = 0;
}

static inline void CUDA_CB gate_wait(void *arg)
{
    struct gate *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static inline void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static inline void *gate_open_thread(void *arg)
{
    gate_open(arg);
    return NULL;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#endif
