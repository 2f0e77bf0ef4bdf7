/* The oneDNN thread's mailbox: mmx_worker_serve and mmx_worker_call (see
 * minimx_dnnl.h). One job at a time: a caller holds `callers` from posting
 * its job until it has taken the result.
 *
 * Each side waits for its flag (`posted` for the server, `done` for the
 * caller) on a condition variable, after spinning for a while when jobs are
 * short. Waking a sleeping thread costs about 45 us on a 2-core VM whose
 * other core is idle, more than a small subgraph's whole run; a job handed
 * to a spinning thread costs well under a microsecond (cffi releases the
 * GIL around C calls, so neither side waits for it either).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "minimx_dnnl.h"

/* How long each side spins before it sleeps, after a short job (the last
 * one ran under SHORT_JOB_NS). The server spins long enough to catch the
 * next call of a caller running small jobs back to back (its Python between
 * two forwards takes 20-40 us); the caller's spin catches a short job's end.
 * After a long job neither spins: both oneDNN's OpenMP threads are busy with
 * the job then, and a spinning thread would only take a core from them. */
enum { SHORT_JOB_NS = 200000, SERVER_SPIN_NS = 100000, CALLER_SPIN_NS = 30000 };

struct flag {
    atomic_int set;
    int sleeping;           /* under `lock`: the waiter sleeps on `cond` */
    pthread_cond_t cond;
};

static pthread_mutex_t callers = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct flag posted = {0, 0, PTHREAD_COND_INITIALIZER};
static struct flag done = {0, 0, PTHREAD_COND_INITIALIZER};
static mmx_job job_fn;
static void *job_arg;
static int job_result;
static atomic_llong last_job_ns;   /* how long the last job ran */
static _Thread_local int is_server;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* How long to spin for a side whose spin is `spin_ns` after short jobs. */
static int64_t spin_after_last_job(int64_t spin_ns) {
    return atomic_load_explicit(&last_job_ns, memory_order_relaxed) < SHORT_JOB_NS ? spin_ns : 0;
}

/* Waits until `f` is set (spinning for up to spin_ns first), then clears it. */
static void wait_for(struct flag *f, int64_t spin_ns) {
    int64_t end = now_ns() + spin_ns;
    for (unsigned i = 1; !atomic_load_explicit(&f->set, memory_order_acquire); i++) {
        relax();
        if ((spin_ns == 0 || i % 64 == 0) && now_ns() > end) {
            pthread_mutex_lock(&lock);
            f->sleeping = 1;
            while (!atomic_load_explicit(&f->set, memory_order_acquire))
                pthread_cond_wait(&f->cond, &lock);
            f->sleeping = 0;
            pthread_mutex_unlock(&lock);
            break;
        }
    }
    atomic_store_explicit(&f->set, 0, memory_order_relaxed);
}

/* Sets `f`, waking its waiter if it sleeps. */
static void raise_flag(struct flag *f) {
    pthread_mutex_lock(&lock);
    atomic_store_explicit(&f->set, 1, memory_order_release);
    if (f->sleeping)
        pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&lock);
}

void mmx_worker_serve(void) {
    is_server = 1;
    for (;;) {
        wait_for(&posted, spin_after_last_job(SERVER_SPIN_NS));
        int64_t start = now_ns();
        job_result = job_fn(job_arg);
        atomic_store_explicit(&last_job_ns, now_ns() - start, memory_order_relaxed);
        raise_flag(&done);
    }
}

int mmx_worker_call(mmx_job fn, void *arg) {
    if (is_server)
        return fn(arg);
    pthread_mutex_lock(&callers);
    job_fn = fn;
    job_arg = arg;
    raise_flag(&posted);
    wait_for(&done, spin_after_last_job(CALLER_SPIN_NS));
    int result = job_result;
    pthread_mutex_unlock(&callers);
    return result;
}

void mmx_worker_forget(void) {
    pthread_mutex_init(&callers, NULL);
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&posted.cond, NULL);
    pthread_cond_init(&done.cond, NULL);
    atomic_store(&posted.set, 0);
    atomic_store(&done.set, 0);
    posted.sleeping = done.sleeping = 0;
}
