/* Gives a process's outgoing IPv4 TCP connections the source address in
 * CINDER_ATTACH_SOURCE_ADDRESS (bind before connect), so that several simulated
 * hosts on one machine reach a service from distinct addresses. A test fixture. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int connect(int fd, const struct sockaddr *to, socklen_t len) {
    static int (*real_connect)(int, const struct sockaddr *, socklen_t);
    if (!real_connect)
        real_connect = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    const char *source = getenv("CINDER_ATTACH_SOURCE_ADDRESS");
    if (source && to && to->sa_family == AF_INET) {
        struct sockaddr_in from;
        memset(&from, 0, sizeof from);
        from.sin_family = AF_INET;
        if (inet_pton(AF_INET, source, &from.sin_addr) == 1)
            (void)bind(fd, (struct sockaddr *)&from, sizeof from); /* already bound: keep it */
    }
    return real_connect(fd, to, len);
}
