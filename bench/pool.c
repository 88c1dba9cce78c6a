/* The worker pool of run, sweep and verify (pool.h). */
#include "pool.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "commands.h"
#include "options.h"

/* A report is written with one write(): below PIPE_BUF the pipe never interleaves or
 * splits it, so the parent reads whole reports only. */
_Static_assert(sizeof(pool_report_t) <= PIPE_BUF, "a report must fit one atomic pipe write");

typedef struct slot {
    pid_t pid;         /* 0: not running */
    int to, from;      /* pipe ends: job numbers to the worker, reports from it; -1 closed */
    int job;           /* the job it was handed and has not reported, -1 none */
    int starts;        /* how many times it was started */
    bool ready;        /* it said POOL_READY */
    bool last;         /* it said it can run nothing more */
    bool progress;     /* it reported a job (or died in one) since it started */
    bool waiting;      /* pool_run_tp: at the barrier of its job */
} slot_t;

typedef struct pool {
    const pool_ops_t *ops;
    void *ctx;
    slot_t *s;
    int nslots;
    const int *order;
    int n, next;       /* jobs handed out so far */
    bool tp;           /* pool_run_tp: every job to every slot at once */
} pool_t;

static int write_full(int fd, const void *buf, size_t n)
{
    for (const char *p = buf; n > 0;) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Whole message, or 0 bytes at end of file, or a short count where the writer died. */
static size_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

int pool_next_job(int in)
{
    int job;
    return read_full(in, &job, sizeof job) == sizeof job ? job : -1;
}

int pool_send(int out, const pool_report_t *rep) { return write_full(out, rep, sizeof *rep); }

int pool_barrier(int in, int out, int job)
{
    pool_report_t rep;
    memset(&rep, 0, sizeof rep);
    rep.job = job;
    rep.barrier = 1;
    if (pool_send(out, &rep) != 0) return -1;
    return pool_next_job(in) >= 0 ? 0 : -1;   /* the release */
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static int start(pool_t *p, int i)
{
    slot_t *s = &p->s[i];
    int jobs[2], reports[2];
    if (pipe(jobs) != 0) {
        cmd_error(NULL, "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe(reports) != 0) {
        cmd_error(NULL, "pipe: %s", strerror(errno));
        close(jobs[0]);
        close(jobs[1]);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        cmd_error(NULL, "fork: %s", strerror(errno));
        close(jobs[0]), close(jobs[1]), close(reports[0]), close(reports[1]);
        return -1;
    }
    if (pid == 0) {
        /* the other workers' pipe ends stay open in this child unless closed here, and
         * an open write end would keep their worker from ever seeing the end of its jobs */
        for (int j = 0; j < p->nslots; ++j) {
            close_fd(&p->s[j].to);
            close_fd(&p->s[j].from);
        }
        close(jobs[1]);
        close(reports[0]);
        signal(SIGPIPE, SIG_DFL);
        _exit(p->ops->worker(p->ctx, i, s->starts, jobs[0], reports[1]));
    }
    close(jobs[0]);
    close(reports[1]);
    *s = (slot_t){.pid = pid, .to = jobs[1], .from = reports[0], .job = -1, .starts = s->starts + 1};
    return 0;
}

/* The next job to slot i, or the end of its jobs when none is left. */
static void dispatch(pool_t *p, int i)
{
    slot_t *s = &p->s[i];
    if (s->to < 0) return;
    if (!s->last && p->next < p->n) {
        int job = p->order[p->next];
        if (write_full(s->to, &job, sizeof job) == 0) {
            s->job = job;
            p->next++;
            return;
        }
        /* the worker is gone: its end of file says how */
    }
    close_fd(&s->to);
}

/* pool_run_tp: the next job to every slot once all are set up and idle; the end of
 * their jobs once none is left. */
static void dispatch_tp(pool_t *p)
{
    for (int i = 0; i < p->nslots; ++i) {
        slot_t *s = &p->s[i];
        if (s->job >= 0) return;   /* the job in hand is not done */
        if (s->last || p->next >= p->n) close_fd(&s->to);
    }
    if (p->next >= p->n) return;
    for (int i = 0; i < p->nslots; ++i)
        if (p->s[i].pid <= 0 || !p->s[i].ready || p->s[i].to < 0) return;   /* starting again */
    int job = p->order[p->next++];
    for (int i = 0; i < p->nslots; ++i) {
        slot_t *s = &p->s[i];
        if (write_full(s->to, &job, sizeof job) == 0) s->job = job;
        else close_fd(&s->to);   /* gone: its end of file says how */
    }
}

/* pool_run_tp: releases the barrier once every slot still holding the job waits at it. */
static void release_tp(pool_t *p)
{
    int waiting = 0;
    for (int i = 0; i < p->nslots; ++i) {
        if (p->s[i].job >= 0 && !p->s[i].waiting) return;
        waiting += p->s[i].waiting;
    }
    if (!waiting) return;
    int go = 0;
    for (int i = 0; i < p->nslots; ++i)
        if (p->s[i].waiting) {
            p->s[i].waiting = false;
            if (p->s[i].to >= 0) write_full(p->s[i].to, &go, sizeof go);
        }
}

static void next_jobs(pool_t *p, int i)
{
    if (!p->tp) {
        dispatch(p, i);
        return;
    }
    release_tp(p);
    dispatch_tp(p);
}

/* Slot i's worker closed its reports: collect it, account for the job it held, start
 * it again while jobs remain. 0, or -1 to stop. */
static int reap(pool_t *p, int i)
{
    slot_t *s = &p->s[i];
    close_fd(&s->from);
    close_fd(&s->to);
    int status = 0;
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {}
    s->pid = 0;
    int job = s->job;
    s->job = -1;
    if (!s->ready) {
        /* runner_open printed why where it failed; a crash says nothing itself */
        if (WIFSIGNALED(status))
            cmd_error(NULL, "a GPU process died while setting up (signal %d)", WTERMSIG(status));
        return -1;
    }
    s->waiting = false;
    if (job >= 0) {
        s->progress = true;
        if (p->ops->died(p->ctx, i, job, status) != 0) return -1;
    }
    if (p->tp) release_tp(p);   /* the others need not wait for it */
    if (p->next >= p->n) {
        if (p->tp) dispatch_tp(p);   /* the others' end of jobs, where they wait for it */
        return 0;
    }
    if (!s->progress) {
        cmd_error(NULL, "a GPU process ended without running a job (%s %d)",
                  WIFSIGNALED(status) ? "signal" : "exit status",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return -1;
    }
    return start(p, i);
}

/* One report or end of file from slot i. 0, or -1 to stop. */
static int take(pool_t *p, int i)
{
    slot_t *s = &p->s[i];
    pool_report_t rep;
    if (read_full(s->from, &rep, sizeof rep) != sizeof rep) return reap(p, i);
    if (rep.job == POOL_READY) {
        s->ready = true;
        if (p->ops->ready) p->ops->ready(p->ctx, i, &rep);
    } else if (rep.barrier) {
        s->waiting = p->tp && rep.job == s->job;
        if (!s->waiting) {
            /* a barrier outside pool_run_tp: let it go at once; its job goes on */
            int go = 0;
            write_full(s->to, &go, sizeof go);
            return 0;
        }
    } else {
        s->job = -1;
        s->progress = true;
        s->last = rep.last != 0;
        if (p->ops->record(p->ctx, i, &rep) != 0) return -1;
    }
    next_jobs(p, i);
    return 0;
}

static void stop_all(pool_t *p)
{
    for (int i = 0; i < p->nslots; ++i) {
        slot_t *s = &p->s[i];
        close_fd(&s->to);
        close_fd(&s->from);
        if (s->pid > 0) {
            kill(s->pid, SIGKILL);   /* rows that cannot be kept are not worth measuring */
            while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {}
            s->pid = 0;
        }
    }
}

static int loop(pool_t *p)
{
    struct pollfd *fds = malloc((size_t)p->nslots * sizeof *fds);
    int *which = malloc((size_t)p->nslots * sizeof *which);
    int rc = fds && which ? 0 : -1;
    if (rc) cmd_error(NULL, "out of host memory");
    while (rc == 0) {
        int n = 0;
        for (int i = 0; i < p->nslots; ++i)
            if (p->s[i].from >= 0) {
                fds[n] = (struct pollfd){.fd = p->s[i].from, .events = POLLIN};
                which[n++] = i;
            }
        if (n == 0) break;
        if (poll(fds, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            cmd_error(NULL, "poll: %s", strerror(errno));
            rc = -1;
            break;
        }
        for (int k = 0; k < n && rc == 0; ++k)
            if (fds[k].revents) rc = take(p, which[k]);
    }
    free(fds);
    free(which);
    return rc;
}

static int run(const pool_ops_t *ops, void *ctx, int slots, const int *order, int n, bool tp)
{
    if (n <= 0) return 0;
    pool_t p = {.ops = ops, .ctx = ctx, .nslots = tp || slots < n ? slots : n, .order = order,
                .n = n, .tp = tp};
    if (p.nslots < 1) p.nslots = 1;
    p.s = calloc((size_t)p.nslots, sizeof *p.s);
    if (!p.s) {
        cmd_error(NULL, "out of host memory");
        return 1;
    }
    for (int i = 0; i < p.nslots; ++i) p.s[i] = (slot_t){.to = -1, .from = -1, .job = -1};
    /* a worker that dies leaves its pipe without a reader: a write to it must fail,
     * not kill the parent */
    struct sigaction ignore = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &old);
    int rc = 0;
    for (int i = 0; i < p.nslots && rc == 0; ++i) rc = start(&p, i);
    if (rc == 0) rc = loop(&p);
    stop_all(&p);
    sigaction(SIGPIPE, &old, NULL);
    free(p.s);
    return rc ? 1 : 0;
}

int pool_run(const pool_ops_t *ops, void *ctx, int slots, const int *order, int n)
{
    return run(ops, ctx, slots, order, n, false);
}

int pool_run_tp(const pool_ops_t *ops, void *ctx, int width, const int *order, int n)
{
    return run(ops, ctx, width, order, n, true);
}

int pool_thread_share(int threads, int slots, int slot)
{
    if (slots < 1) slots = 1;
    int share = threads / slots + (slot >= 0 && slot < threads % slots);
    return share > 0 ? share : 1;
}

int pool_devices_check(const char (*keys)[32], int visible, bool all, int *devices,
                       int *n_devices, char *msg, size_t len)
{
    if (all) {
        *n_devices = visible < DEVICES_MAX ? visible : DEVICES_MAX;
        for (int i = 0; i < *n_devices; ++i) devices[i] = i;
    }
    for (int i = 0; i < *n_devices; ++i)
        if (devices[i] >= visible) {
            snprintf(msg, len, "--devices: there is no device %d: this machine shows %d (0 to %d)",
                     devices[i], visible, visible - 1);
            return -1;
        }
    for (int i = 1; i < *n_devices; ++i)
        if (strcmp(keys[devices[i]], keys[devices[0]]) != 0) {
            snprintf(msg, len, "--devices: GPUs of different kinds (device %d is %s, device %d is %s): "
                     "one CSV holds one gpu; name devices of one kind", devices[0], keys[devices[0]],
                     devices[i], keys[devices[i]]);
            return -1;
        }
    return 0;
}

int pool_visible_device(const char *parent_env, int d, char *buf, size_t len)
{
    if (!parent_env) {
        snprintf(buf, len, "%d", d);
        return 0;
    }
    const char *p = parent_env;
    for (int i = 0; i < d; ++i) {
        p = strchr(p, ',');
        if (!p) return -1;
        p++;
    }
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= len) return -1;
    snprintf(buf, len, "%.*s", (int)n, p);
    return 0;
}
