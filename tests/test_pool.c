/* The worker pool of run, sweep and verify (bench/pool.c) with fake workers in place of
 * the GPU ones: every job is reported once, over any number of workers; a worker killed
 * inside a job costs that job's row only and the others go on; a worker that can run
 * nothing more is replaced; one that cannot set up, or a parent that cannot keep the
 * rows, stops everything and leaves no process behind; the time each worker spent
 * reaches the parent; workers running at once share the CPU threads. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../bench/pool.h"

#define JOBS_MAX 64

/* What the fake worker does (the child's copy), and what the parent saw. */
typedef struct fake {
    int die_on;        /* job whose worker kills itself inside it, -1 none */
    int last_on;       /* job after which the worker says it can run nothing more */
    int no_setup;      /* the worker exits before POOL_READY */
    int stop_after;    /* record says stop after this many rows, -1 never */
    int reported[JOBS_MAX], died[JOBS_MAX], died_signal[JOBS_MAX];
    int order_seen[JOBS_MAX], n_seen;
    int starts_max;
    int readies;          /* POOL_READY reports the parent was told of (pool_ops_t.ready) */
    double setup_s, row_s; /* the time they and the rows' reports carried, summed */
} fake_t;

static int fake_worker(void *ctx, int slot, int starts, int in, int out)
{
    const fake_t *f = ctx;
    if (f->no_setup) return 1;
    pool_report_t rep;
    memset(&rep, 0, sizeof rep);
    rep.job = POOL_READY;
    rep.spent.total_s = 2.0;
    rep.spent.peak_s = 1.5;
    if (pool_send(out, &rep)) return 1;
    for (int j; (j = pool_next_job(in)) >= 0;) {
        if (j == f->die_on) raise(SIGKILL);
        memset(&rep, 0, sizeof rep);
        rep.job = j;
        rep.last = j == f->last_on;
        rep.row.beam = j;          /* the row says which job it is */
        rep.row.batch = slot;
        rep.row.iters = starts;
        rep.spent.total_s = 0.25;
        if (pool_send(out, &rep)) return 1;
        if (rep.last) return 3;
    }
    return 0;
}

static int fake_record(void *ctx, int slot, pool_report_t *rep)
{
    fake_t *f = ctx;
    assert_int_equal(rep->row.beam, rep->job);
    assert_int_equal(rep->row.batch, slot);
    f->reported[rep->job]++;
    f->order_seen[f->n_seen++] = rep->job;
    if (rep->row.iters > f->starts_max) f->starts_max = rep->row.iters;
    f->row_s += rep->spent.total_s;
    return f->stop_after >= 0 && f->n_seen >= f->stop_after ? -1 : 0;
}

static int fake_died(void *ctx, int slot, int job, int status)
{
    (void)slot;
    fake_t *f = ctx;
    f->died[job]++;
    f->died_signal[job] = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 0;
}

static void fake_ready(void *ctx, int slot, const pool_report_t *rep)
{
    (void)slot;
    fake_t *f = ctx;
    assert_int_equal(rep->job, POOL_READY);
    assert_true(rep->spent.peak_s == 1.5);
    f->readies++;
    f->setup_s += rep->spent.total_s;
}

static const pool_ops_t ops = {fake_worker, fake_record, fake_died, NULL};
static const pool_ops_t ops_told_ready = {fake_worker, fake_record, fake_died, fake_ready};

static void fake_init(fake_t *f)
{
    memset(f, 0, sizeof *f);
    f->die_on = f->last_on = f->stop_after = -1;
}

/* No worker is left behind: every child was waited for. */
static void assert_no_children(void)
{
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void every_job_is_reported_once(void **state)
{
    (void)state;
    int order[JOBS_MAX];
    const int sizes[] = {0, 1, 3, 17, 40};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
        for (int slots = 1; slots <= 4; ++slots) {
            int n = sizes[s];
            for (int i = 0; i < n; ++i) order[i] = n - 1 - i;   /* handed out last first */
            fake_t f;
            fake_init(&f);
            assert_int_equal(pool_run(&ops, &f, slots, order, n), 0);
            assert_int_equal(f.n_seen, n);
            for (int i = 0; i < n; ++i) {
                assert_int_equal(f.reported[i], 1);
                assert_int_equal(f.died[i], 0);
            }
            /* one worker takes the jobs strictly in the order given */
            if (slots == 1) assert_memory_equal(f.order_seen, order, (size_t)n * sizeof *order);
            assert_no_children();
        }
}

static void a_killed_worker_costs_its_job_only(void **state)
{
    (void)state;
    int order[20];
    for (int i = 0; i < 20; ++i) order[i] = i;
    for (int slots = 1; slots <= 3; ++slots) {
        fake_t f;
        fake_init(&f);
        f.die_on = 7;
        assert_int_equal(pool_run(&ops, &f, slots, order, 20), 0);
        for (int i = 0; i < 20; ++i) {
            assert_int_equal(f.reported[i], i != 7);
            assert_int_equal(f.died[i], i == 7);
        }
        assert_int_equal(f.died_signal[7], SIGKILL);
        assert_int_equal(f.n_seen, 19);
        assert_no_children();
    }
}

static void a_worker_that_can_run_no_more_is_replaced(void **state)
{
    (void)state;
    int order[12];
    for (int i = 0; i < 12; ++i) order[i] = i;
    fake_t f;
    fake_init(&f);
    f.last_on = 4;
    assert_int_equal(pool_run(&ops, &f, 1, order, 12), 0);
    for (int i = 0; i < 12; ++i) assert_int_equal(f.reported[i], 1);
    assert_int_equal(f.starts_max, 1);          /* the jobs after 4 ran in a second worker */
    assert_no_children();
}

static void a_worker_that_cannot_set_up_stops_the_pool(void **state)
{
    (void)state;
    int order[5] = {0, 1, 2, 3, 4};
    fake_t f;
    fake_init(&f);
    f.no_setup = 1;
    assert_int_equal(pool_run(&ops, &f, 2, order, 5), 1);
    assert_int_equal(f.n_seen, 0);
    assert_no_children();
}

static void rows_that_cannot_be_kept_stop_every_worker(void **state)
{
    (void)state;
    int order[30];
    for (int i = 0; i < 30; ++i) order[i] = i;
    fake_t f;
    fake_init(&f);
    f.stop_after = 3;
    assert_int_equal(pool_run(&ops, &f, 3, order, 30), 1);
    assert_int_equal(f.n_seen, 3);
    assert_no_children();
}

/* The time a worker says it spent reaches the parent: its setting up once a start (a
 * replaced worker's too), each row's with the row. */
static void the_time_spent_reaches_the_parent(void **state)
{
    (void)state;
    int order[12];
    for (int i = 0; i < 12; ++i) order[i] = i;
    fake_t f;
    fake_init(&f);
    f.last_on = 4;
    assert_int_equal(pool_run(&ops_told_ready, &f, 1, order, 12), 0);
    assert_int_equal(f.readies, 2);             /* started again after job 4 */
    assert_true(f.setup_s == 4.0);
    assert_true(f.row_s == 12 * 0.25);
    fake_init(&f);
    assert_int_equal(pool_run(&ops_told_ready, &f, 3, order, 12), 0);
    assert_int_equal(f.readies, 3);
    assert_no_children();
}

/* Workers running at once share the CPU threads: evenly, the first ones one more where
 * they do not divide, never none; one worker keeps them all. */
static void workers_share_the_threads(void **state)
{
    (void)state;
    assert_int_equal(pool_thread_share(32, 1, 0), 32);
    assert_int_equal(pool_thread_share(32, 2, 0), 16);
    assert_int_equal(pool_thread_share(32, 2, 1), 16);
    const int shares[3] = {6, 5, 5};
    for (int slot = 0; slot < 3; ++slot) assert_int_equal(pool_thread_share(16, 3, slot), shares[slot]);
    for (int threads = 1; threads <= 40; ++threads)
        for (int slots = 1; slots <= 9; ++slots) {
            int sum = 0;
            for (int slot = 0; slot < slots; ++slot) {
                const int share = pool_thread_share(threads, slots, slot);
                assert_true(share >= 1);
                sum += share;
            }
            assert_int_equal(sum, threads >= slots ? threads : slots);   /* fewer threads than workers: one each */
        }
    assert_int_equal(pool_thread_share(8, 0, 0), 8);   /* no count given: one worker */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_job_is_reported_once),
        cmocka_unit_test(the_time_spent_reaches_the_parent),
        cmocka_unit_test(workers_share_the_threads),
        cmocka_unit_test(a_killed_worker_costs_its_job_only),
        cmocka_unit_test(a_worker_that_can_run_no_more_is_replaced),
        cmocka_unit_test(a_worker_that_cannot_set_up_stops_the_pool),
        cmocka_unit_test(rows_that_cannot_be_kept_stop_every_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
