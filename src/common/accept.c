/* SPDX-License-Identifier: Apache-2.0
 *
 * The accept loop's wait (see accept.h).
 */
#include "common/accept.h"

#include "common/log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

int tf_accept_next(int lfd, int wake_fd, const char *subsys)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
        int n = poll(p, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (p[1].revents & POLLIN))
            return -1;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
            continue;
        tf_log(TF_LOG_ERROR, subsys, "accept: %s", strerror(errno));
        struct timespec d = {0, 100 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
}

int tf_thread_detached(void *(*fn)(void *), void *arg)
{
    pthread_attr_t at;
    int e = pthread_attr_init(&at);
    if (e)
        return e;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    e = pthread_create(&t, &at, fn, arg);
    pthread_attr_destroy(&at);
    return e;
}
