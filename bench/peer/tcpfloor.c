/*
 * tcpfloor: the floor under any transport's round trip over TCP on this
 * host. Two processes joined by one loopback TCP connection (Nagle off)
 * bounce a message of -size bytes back and forth; each side waits for the
 * other's message by polling its socket without blocking (-poll, the best
 * case: a core each, never asleep) or by blocking in recv (-block). It
 * prints the mean round trip, as shmemperf's JSON schema, and how long
 * one send() takes.
 *
 * A get, a fetch-add, or a put and the quiet that completes it, is one
 * such round trip at least, plus the transport's own work; compare.sh tcp
 * prints this floor beside its table.
 *
 *   cc -O2 -o bin/tcpfloor bench/peer/tcpfloor.c
 *   bin/tcpfloor [-size N] [-iters N] [-block] [-json]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* recv_all reads exactly n bytes, polling or blocking. */
static void recv_all(int fd, char *buf, size_t n, int poll)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, buf + got, n - got, poll ? MSG_DONTWAIT : 0);
		if (r > 0)
			got += (size_t)r;
		else if (r == 0)
			die("recv: the other side closed");
		else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			die("recv");
	}
}

static void send_all(int fd, const char *buf, size_t n)
{
	size_t sent = 0;
	while (sent < n) {
		ssize_t r = send(fd, buf + sent, n - sent, MSG_NOSIGNAL);
		if (r < 0 && errno != EINTR)
			die("send");
		if (r > 0)
			sent += (size_t)r;
	}
}

static void nodelay(int fd)
{
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
		die("setsockopt TCP_NODELAY");
}

static void usage(const char *why)
{
	fprintf(stderr, "tcpfloor: %s\nusage: tcpfloor [-size N] [-iters N] [-block] [-json]\n", why);
	exit(2);
}

int main(int argc, char **argv)
{
	long size = 8, iters = 100000, warmup = 1000;
	int poll = 1, json = 0;
	for (int i = 1; i < argc; i++) {
		int more = i + 1 < argc;
		if (!strcmp(argv[i], "-size") && more)
			size = atol(argv[++i]);
		else if (!strcmp(argv[i], "-iters") && more)
			iters = atol(argv[++i]);
		else if (!strcmp(argv[i], "-block"))
			poll = 0;
		else if (!strcmp(argv[i], "-json"))
			json = 1;
		else
			usage("unknown or incomplete argument");
	}
	if (size < 1 || size > 1 << 20 || iters < 1)
		usage("-size must be 1 to 1M bytes and -iters at least 1");

	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof a;
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &alen) < 0)
		die("listen on loopback");
	char *buf = calloc(1, (size_t)size);
	if (!buf)
		die("calloc");
	long total = warmup + 2 * iters;

	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) { /* the echo side */
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0)
			die("connect");
		nodelay(s);
		for (long i = 0; i < total; i++) {
			recv_all(s, buf, (size_t)size, poll);
			send_all(s, buf, (size_t)size);
		}
		return 0;
	}
	int s = accept(ls, NULL, NULL);
	if (s < 0)
		die("accept");
	nodelay(s);
	for (long i = 0; i < warmup; i++) {
		send_all(s, buf, (size_t)size);
		recv_all(s, buf, (size_t)size, poll);
	}
	double t0 = now_us();
	for (long i = 0; i < iters; i++) {
		send_all(s, buf, (size_t)size);
		recv_all(s, buf, (size_t)size, poll);
	}
	double rtt = (now_us() - t0) / iters, in_send = 0;
	for (long i = 0; i < iters; i++) {
		double t = now_us();
		send_all(s, buf, (size_t)size);
		in_send += now_us() - t;
		recv_all(s, buf, (size_t)size, poll);
	}
	int status;
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		usage("the echo process failed");
	const char *mode = poll ? "tcp-floor(poll)" : "tcp-floor(block)";
	if (json)
		printf("{\"test\":\"rtt\",\"provider\":\"%s\",\"npes\":2,\"size\":%ld,\"latency_us\":%.4f}\n", mode, size, rtt);
	else
		printf("%s: %ld-byte round trip %.2f us, of which send() %.2f us\n", mode, size, rtt, in_send / iters);
	return 0;
}
