/* SPDX-License-Identifier: Apache-2.0
 *
 * What the servers that run a thread per connection share (the controller's HTTP(S) server,
 * tf-worker): the accept loop's wait for the next connection of a listening socket, until a
 * wake-up descriptor says stop, and the start of a connection's detached thread.
 */
#ifndef TF_COMMON_ACCEPT_H
#define TF_COMMON_ACCEPT_H

/* Blocks until LFD has a connection or WAKE_FD is readable. Returns the accepted descriptor
 * (close-on-exec), or -1 when woken (or when waiting itself failed: the loop should end).
 * Transient accept errors are retried; running out of descriptors or memory is logged under
 * SUBSYS and retried after 100 ms instead of spinning. */
int tf_accept_next(int lfd, int wake_fd, const char *subsys);

/* Starts FN(ARG) on a detached thread. 0, or the pthread_create error number. */
int tf_thread_detached(void *(*fn)(void *), void *arg);

#endif
