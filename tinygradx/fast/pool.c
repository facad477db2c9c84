/* tinygradx's thread pool: one set of threads for numpy's OpenBLAS and for tinygradx's own
 * matrix products (read pool.py first: it says what this file is for and how it is used).
 *
 * Why C: handing work to a Python thread costs 20-50 us (a queue, a wake-up, the GIL), more
 * than the 50-200 us a head-batched product of attention takes. Here a thread that finished
 * a task keeps polling for the next for a while (yielding the core to anyone else who wants
 * it), so a hand-off costs about a microsecond while work keeps coming, and it sleeps on a
 * futex when it stops coming.
 *
 * Why one pool: OpenBLAS keeps threads of its own that spin after every GEMM. A second pool
 * beside them makes three busy threads on two cores (a GPT step 3x slower, measured).
 * OpenBLAS (0.3.28 on) lets a program run its parallel jobs instead:
 * openblas_set_threads_callback_function. pool.py hands it `tgx_openblas_jobs` below, so
 * OpenBLAS's own threads sleep for good and every threaded GEMM of the process runs on these
 * threads. OpenBLAS still splits each GEMM the same way, so its numbers do not change.
 *
 * Everything here is called with the GIL released (ctypes) and touches only the memory it
 * is given; pool.py keeps the arrays alive for the duration of a call.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64             /* pool.py leaves OpenBLAS alone when it runs more */

#if defined(__x86_64__) || defined(__i386__)
#define RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define RELAX() __asm__ __volatile__("yield")
#else
#define RELAX() ((void)0)
#endif

/* ---- the pool ------------------------------------------------------------------------ */

typedef void (*part_fn)(int part, int parts, void *arg);

static int n_threads = 1;              /* the caller plus n_threads - 1 workers */
static int n_started = 0;              /* workers running (0 again in a forked child) */
static long poll_ns = 2000000;         /* how long an idle worker polls before it sleeps */
static atomic_uint task_no;            /* bumped for every task; the futex word */
static atomic_int to_finish;           /* workers still on the current task */
static atomic_int asleep;              /* workers sleeping on the futex */
static atomic_int parked;              /* idle workers sleep at once instead of polling */
static atomic_flag in_use = ATOMIC_FLAG_INIT;
static unsigned first_task;            /* task_no when the workers started */
static part_fn task_fn;                /* the current task (written before task_no is bumped) */
static void *task_arg;
static int task_parts;
static atomic_long n_tasks, n_spawned; /* counters, for tests and reports */

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void *worker(void *arg)
{
    int part = (int)(intptr_t)arg;
    unsigned seen = first_task;
    for (;;) {
        long since = now_ns();
        unsigned now;
        while ((now = atomic_load_explicit(&task_no, memory_order_acquire)) == seen) {
            if (now_ns() - since < poll_ns && !atomic_load_explicit(&parked, memory_order_relaxed)) {
                sched_yield();          /* poll, but let any other runnable thread have the core */
                continue;
            }
            atomic_fetch_add(&asleep, 1);
            /* sleeps only if task_no is still `seen` (the kernel checks), so a task posted
               between the load above and this call is not missed */
            syscall(SYS_futex, &task_no, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
            atomic_fetch_sub(&asleep, 1);
            since = now_ns();
        }
        seen = now;
        if (part < task_parts)
            task_fn(part, task_parts, task_arg);
        atomic_fetch_sub_explicit(&to_finish, 1, memory_order_release);
    }
    return NULL;
}

static void forget_workers(void)       /* in a forked child: the threads did not come along */
{
    n_started = 0;
    atomic_flag_clear(&in_use);
    atomic_store(&asleep, 0);
}

static int start_workers(void)
{
    static int registered = 0;
    if (!registered) {
        pthread_atfork(NULL, NULL, forget_workers);
        registered = 1;
    }
    first_task = atomic_load(&task_no);
    for (; n_started < n_threads - 1; n_started++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(intptr_t)(n_started + 1)) != 0)
            break;
        pthread_detach(t);
    }
    return n_started + 1;
}

/* fn(part, parts, arg) for every part in [0, parts), all at once, the caller running part 0.
 * Returns 0 without running anything when the pool is taken (a task inside a task, or
 * another thread's) or has too few threads: the caller decides what to do then. */
static int run_parts(part_fn fn, int parts, void *arg)
{
    if (parts < 2 || atomic_flag_test_and_set(&in_use))
        return 0;
    if (n_started + 1 < parts && start_workers() < parts) {
        atomic_flag_clear(&in_use);
        return 0;
    }
    atomic_store_explicit(&parked, 0, memory_order_relaxed);
    task_fn = fn;
    task_arg = arg;
    task_parts = parts;
    atomic_store(&to_finish, n_started);
    atomic_fetch_add_explicit(&task_no, 1, memory_order_seq_cst);
    if (atomic_load(&asleep))
        syscall(SYS_futex, &task_no, FUTEX_WAKE_PRIVATE, MAX_THREADS, NULL, NULL, 0);
    fn(0, parts, arg);
    /* the others' parts are about as long as ours: wait on the core, but give it up after a
       while in case a worker waits for it (more threads than free cores) */
    for (long spins = 0; atomic_load_explicit(&to_finish, memory_order_acquire) > 0; spins++) {
        if (spins < 4096)
            RELAX();
        else
            sched_yield();
    }
    atomic_fetch_add(&n_tasks, 1);
    atomic_flag_clear(&in_use);
    return 1;
}

/* part's share of n, cut at multiples of 16 floats (64 bytes: no cache line shared) */
static void share(int64_t n, int part, int parts, int64_t *lo, int64_t *hi)
{
    int64_t lines = (n + 15) / 16;
    *lo = lines * part / parts * 16;
    *hi = lines * (part + 1) / parts * 16;
    if (*hi > n)
        *hi = n;
    if (*lo > n)
        *lo = n;
}

/* Idle workers stop polling and sleep until the next task: for work about to run on other
 * threads (tinygradx.parallel's Python threads), which a polling worker would keep from the
 * core the scheduler gives them. */
void tgx_park(void)
{
    atomic_store_explicit(&parked, 1, memory_order_relaxed);
}

/* ---- OpenBLAS's parallel jobs ------------------------------------------------------------ */

/* OpenBLAS's callback types (openblas_config.h) */
typedef void (*openblas_dojob)(int thread_num, void *jobdata, int dojob_data);

struct jobs { openblas_dojob run; char *data; size_t size; int extra; };

static void one_job(int part, int parts, void *arg)
{
    struct jobs *j = arg;
    (void)parts;
    j->run(part, j->data + (size_t)part * j->size, j->extra);
}

struct spawned { struct jobs *jobs; int part; };

static void *spawned_job(void *arg)
{
    struct spawned *s = arg;
    one_job(s->part, 0, s->jobs);
    return NULL;
}

/* OpenBLAS's parts of one GEMM wait for each other (they share packed panels), so they must
 * all run at the same time: on the pool, or when it is taken (OpenBLAS called from inside a
 * task, or from two threads at once) on threads made for them. */
void tgx_openblas_jobs(int sync, openblas_dojob run, int n, size_t size, void *data, int extra)
{
    struct jobs j = {run, data, size, extra};
    pthread_t threads[MAX_THREADS];
    struct spawned args[MAX_THREADS];
    int made = 1;
    (void)sync;                         /* OpenBLAS always waits for the jobs (sync = 1) */
    if (n <= 1) {
        if (n == 1)
            one_job(0, 1, &j);
        return;
    }
    if (n <= MAX_THREADS && run_parts(one_job, n, &j))
        return;
    atomic_fetch_add(&n_spawned, 1);
    for (int p = 1; p < n && p < MAX_THREADS; p++) {
        args[p].jobs = &j;
        args[p].part = p;
        if (pthread_create(&threads[p], NULL, spawned_job, &args[p]) != 0)
            break;
        made = p + 1;
    }
    if (made < n)       /* no thread to be had: the jobs would wait for each other for ever */
        abort();
    one_job(0, n, &j);
    for (int p = 1; p < made; p++)
        pthread_join(threads[p], NULL);
}

/* ---- stacks of products ------------------------------------------------------------------ */

/* cblas_?gemm with 64-bit (ILP64, numpy's wheels) or 32-bit integers */
typedef void (*sgemm64)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                        int64_t, const float *, int64_t, float, float *, int64_t);
typedef void (*dgemm64)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                        int64_t, const double *, int64_t, double, double *, int64_t);
typedef void (*sgemm32)(int, int, int, int, int, int, float, const float *, int,
                        const float *, int, float, float *, int);
typedef void (*dgemm32)(int, int, int, int, int, int, double, const double *, int,
                        const double *, int, double, double *, int);
typedef int (*get_threads_fn)(void);
typedef void (*set_threads_fn)(int);

static void *sgemm, *dgemm;
static int ilp64;
static get_threads_fn blas_threads;
static set_threads_fn set_blas_threads;

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

/* One product stack, as pool.py packs it into int64s: C[i] = A[i] B[i] for every i of
 * `count`, each A (m, k), B (k, n), C (m, n); A or B taken transposed when ta / tb; the i-th
 * matrix sits at base + the batch index (unravelled over `dims` batch dims of `shape`) times
 * each operand's batch strides, in bytes. */
struct stack {
    int64_t count, dims, shape[4], a_step[4], b_step[4], c_step[4];
    int64_t ta, tb, m, n, k, lda, ldb, ldc, a, b, c, is_double;
};

static void gemm(const struct stack *s, int64_t a, int64_t b, int64_t c)
{
    int ta = s->ta ? TRANS : NO_TRANS, tb = s->tb ? TRANS : NO_TRANS;
    if (s->is_double && ilp64)
        ((dgemm64)dgemm)(ROW_MAJOR, ta, tb, s->m, s->n, s->k, 1.0, (const double *)a, s->lda,
                         (const double *)b, s->ldb, 0.0, (double *)c, s->ldc);
    else if (s->is_double)
        ((dgemm32)dgemm)(ROW_MAJOR, ta, tb, (int)s->m, (int)s->n, (int)s->k, 1.0,
                         (const double *)a, (int)s->lda, (const double *)b, (int)s->ldb, 0.0,
                         (double *)c, (int)s->ldc);
    else if (ilp64)
        ((sgemm64)sgemm)(ROW_MAJOR, ta, tb, s->m, s->n, s->k, 1.0f, (const float *)a, s->lda,
                         (const float *)b, s->ldb, 0.0f, (float *)c, s->ldc);
    else
        ((sgemm32)sgemm)(ROW_MAJOR, ta, tb, (int)s->m, (int)s->n, (int)s->k, 1.0f,
                         (const float *)a, (int)s->lda, (const float *)b, (int)s->ldb, 0.0f,
                         (float *)c, (int)s->ldc);
}

static void stack_part(int part, int parts, void *arg)
{
    const struct stack *s = arg;
    int64_t lo = s->count * part / parts, hi = s->count * (part + 1) / parts;
    for (int64_t i = lo; i < hi; i++) {
        int64_t rest = i, a = s->a, b = s->b, c = s->c;
        for (int64_t d = s->dims - 1; d >= 0; d--) {
            int64_t at = rest % s->shape[d];
            rest /= s->shape[d];
            a += at * s->a_step[d];
            b += at * s->b_step[d];
            c += at * s->c_step[d];
        }
        gemm(s, a, b, c);
    }
}

/* The stack in `parts` blocks of its batch at once (each product small enough that OpenBLAS
 * runs it on the calling thread: pool.py checks), at most as many as OpenBLAS's thread count
 * now (a program may have lowered it since), or on this thread when the pool is taken. */
/* at most as many parts as OpenBLAS's thread count now (a program may have lowered it) */
static int capped(int parts)
{
    int threads = blas_threads();
    return parts > threads ? threads : parts;
}

void tgx_stack(const struct stack *s, int parts)
{
    if (!run_parts(stack_part, capped(parts), (void *)s))
        stack_part(0, 1, (void *)s);
}

/* The column sums of g (rows, n), in order down each column: out[j] = ((g[0][j] + g[1][j]) +
 * g[2][j]) + ..., the additions numpy's g.sum(0) makes on a C-ordered array (a linear layer's
 * db), so the same bits; columns [lo, hi) only. */
struct colsums { const void *g; void *out; int64_t rows, n, is_double; };

/* one loop for both dtypes: T is float or double */
#define COLUMN_SUMS(T, c, lo, hi)                                                 \
    do {                                                                          \
        const T *g_ = (c)->g;                                                     \
        T *out_ = (c)->out;                                                       \
        memcpy(out_ + (lo), g_ + (lo), (size_t)((hi) - (lo)) * sizeof(T));        \
        for (int64_t i_ = 1; i_ < (c)->rows; i_++) {                              \
            const T *row_ = g_ + i_ * (c)->n;                                     \
            _Pragma("omp simd")                                                   \
            for (int64_t j_ = (lo); j_ < (hi); j_++)                              \
                out_[j_] += row_[j_];                                             \
        }                                                                         \
    } while (0)

static void column_sums(const struct colsums *c, int64_t lo, int64_t hi)
{
    if (c->is_double)
        COLUMN_SUMS(double, c, lo, hi);
    else
        COLUMN_SUMS(float, c, lo, hi);
}

struct pair { const struct stack *products[2]; const struct colsums *sums; };

static void pair_part(int part, int parts, void *arg)
{
    const struct pair *p = arg;
    stack_part(0, 1, (void *)p->products[part]);
    if (p->sums) {                      /* then this thread's half of the columns */
        int64_t lo, hi;
        share(p->sums->n, part, parts, &lo, &hi);
        column_sums(p->sums, lo, hi);
    }
}

/* Two independent products at once, one per thread, with OpenBLAS on one thread meanwhile
 * (a layer's dX = g W and dW = g^T X: the same FLOPs each), and with `sums` (or NULL) the
 * column sums of g (db), half the columns on each thread after its product. Two
 * single-threaded GEMMs side by side skip the hand-offs and the panel sharing of two
 * two-threaded GEMMs; each gives the numbers of OpenBLAS on one thread. One after the other
 * when the pool is taken or BLAS is held to one thread. */
void tgx_pair(const struct stack *first, const struct stack *second, const struct colsums *sums)
{
    struct pair both = {{first, second}, sums};
    int threads = blas_threads();
    if (threads >= 2) {
        set_blas_threads(1);
        int ran = run_parts(pair_part, 2, &both);
        set_blas_threads(threads);
        if (ran)
            return;
    }
    pair_part(0, 2, &both);
    pair_part(1, 2, &both);
}

/* ---- attention, one head at a time ----------------------------------------------------- */

/* Fused attention's float32 forward and backward (ops/attention.py holds the formulas and the
 * numpy path, which stays the reference). numpy runs a head-batched attention as whole-stack
 * passes: the scores of all 48 heads of a GPT CPU config layer (786 KB) are written by one
 * matmul, read and written again by the mask, the row max, exp and the normalisation, then
 * read by the next matmul. Here each head runs start to end on one thread, its 64 x 64
 * scores staying in the core's cache between the products and the softmax, and the heads
 * are cut between the pool's threads. The products are the same cblas_sgemm calls numpy's
 * loop makes; the softmax keeps kernels.py's rules (a NaN gives a NaN row, a fully masked row
 * zeros) with its own exp and float32 sums. */

/* e^x in float32 for x <= 0 (a score minus its row's max): x = k ln2 + r with |r| <= ln2/2,
 * e^r by a polynomial (a least-squares fit of degree 6, within 2e-9 of e^r), 2^k written
 * into the exponent bits. At most 1 ulp from the correctly rounded value (numpy's exp: 3);
 * below -87.3, where e^x leaves float32's normal range, 0 (a masked score's -inf included);
 * NaN stays NaN. Plain arithmetic, so the compiler vectorises the loops that call it. */
static inline float exp_nonpositive(float x)
{
    const float big = 12582912.0f;                 /* 1.5 * 2^23: adding it rounds to an int */
    float xc = x < -87.5f ? -87.5f : x;
    float t = xc * 1.44269504088896341f + big;     /* round(x / ln 2) in t's low bits */
    float k = t - big;
    int32_t ti, bits;
    float two_k;
    memcpy(&ti, &t, sizeof ti);
    bits = (ti - 0x4B400000 + 127) << 23;          /* 0x4B400000: the bits of `big` */
    memcpy(&two_k, &bits, sizeof two_k);
    float r = (xc - k * 0.693359375f) - k * -2.12194440e-4f;      /* ln 2 in two parts */
    float p = ((((0.0013843654f * r + 0.0083741555f) * r + 0.041668002f) * r
                + 0.16666432f) * r + 0.49999994f) * r + 1.0f;
    p = p * r + 1.0f;
    return x < -87.3f ? 0.0f : p * two_k;
}

/* row <- softmax(row + mask) in place (mask NULL: none), as kernels.softmax: a NaN anywhere
 * gives a NaN row, a fully masked row gives zeros. The sums run in float32, over the
 * vector's lanes where the build vectorises (a float64 accumulator kept GCC from vectorising
 * the loop: 3x slower) */
static void softmax_row(float *row, const float *mask, int64_t n)
{
    float top = -INFINITY;
    int bad = 0;
    if (mask) {
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            row[j] += mask[j];
    }
#pragma omp simd reduction(max:top) reduction(|:bad)
    for (int64_t j = 0; j < n; j++) {
        top = row[j] > top ? row[j] : top;
        bad |= row[j] != row[j];
    }
    if (bad)
        top = NAN;
    else if (top == -INFINITY)
        top = 0.0f;                                /* every key masked: zeros, not NaN */
    float total = 0.0f;
#pragma omp simd reduction(+:total)
    for (int64_t j = 0; j < n; j++) {
        float e = exp_nonpositive(row[j] - top);
        row[j] = e;
        total += e;
    }
    float inv = 1.0f / (total == 0.0f ? 1.0f : total);
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        row[j] *= inv;
}

/* d <- a (d - rowsum(d a)) for one row: softmax's backward, in place */
static void softmax_grad_row(float *d, const float *a, int64_t n)
{
    float dot = 0.0f;
#pragma omp simd reduction(+:dot)
    for (int64_t j = 0; j < n; j++)
        dot += d[j] * a[j];
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        d[j] = a[j] * (d[j] - dot);
}

/* One attention stack, as pool.py packs it into int64s: for every head i of `count`
 * (unravelled over `dims` batch dims of `shape`), each matrix at its base + the batch index
 * times its batch strides (bytes), rows `ld` floats apart, unit stride along a row.
 * Q (m, d), K (n, d), V (n, dv), the mask (m, n) shared by every head (0: none), the scaled Q
 * and the weights A (m, n) kept for the backward, Z (m, dv); the backward's g (m, dv), dS
 * (m, n) and dQ, dK, dV like Q, K, V (0: not wanted); with dropout its scaled keep-mask D
 * (m, n); `scratch`, per part m * n floats for A' = A D and n * max(d, dv) for K^T or V^T. */
enum { Q, K, V, QS, A, Z, G, DS, DQ, DK, DV, KEEP, N_MATS };

struct attn {
    int64_t count, dims, shape[4], step[N_MATS][4], ld[N_MATS], base[N_MATS];
    int64_t m, n, d, dv, mask, ld_mask, scratch;
    double scale;
};

static void sgemm_call(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                       int64_t ldc)
{
    if (ilp64)
        ((sgemm64)sgemm)(ROW_MAJOR, ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
    else
        ((sgemm32)sgemm)(ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
                         (int)ldb, 0.0f, c, (int)ldc);
}

/* the addresses of head i's matrices */
static void head(const struct attn *s, int64_t i, float *at[N_MATS])
{
    for (int x = 0; x < N_MATS; x++)
        at[x] = (float *)(intptr_t)s->base[x];
    for (int64_t d = s->dims - 1; d >= 0; d--) {
        int64_t pos = i % s->shape[d];
        i /= s->shape[d];
        for (int x = 0; x < N_MATS; x++)
            at[x] = (float *)((char *)at[x] + pos * s->step[x][d]);
    }
}

/* This part's scratch: m * n floats, then n * max(d, dv) */
static float *scratch(const struct attn *s, int part)
{
    int64_t wide = s->d > s->dv ? s->d : s->dv;
    return (float *)(intptr_t)s->scratch + (int64_t)part * (s->m * s->n + s->n * wide);
}

/* X^T of X (rows, cols; rows `ld` floats apart) into out (cols, rows), in the part's scratch:
 * OpenBLAS's small-matrix kernel multiplies by a transposed operand ~1.5x slower than by a
 * plain one (64 x 32 by 32 x 64: 6.8 against 4.5 us), more than the copy costs */
static float *transposed(const struct attn *s, int part, const float *x, int64_t rows,
                         int64_t cols, int64_t ld)
{
    float *out = scratch(s, part) + s->m * s->n;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            out[c * rows + r] = x[r * ld + c];
    return out;
}

/* The weights the product with V sees: A, or with dropout A' = A D in this part's scratch.
 * Returns their row stride through *ld. */
static const float *weights(const struct attn *s, float *at[N_MATS], int part, int64_t *ld)
{
    if (!s->base[KEEP]) {
        *ld = s->ld[A];
        return at[A];
    }
    float *w = scratch(s, part);
    for (int64_t r = 0; r < s->m; r++) {
        const float *a = at[A] + r * s->ld[A], *keep = at[KEEP] + r * s->ld[KEEP];
        float *row = w + r * s->n;
#pragma omp simd
        for (int64_t j = 0; j < s->n; j++)
            row[j] = a[j] * keep[j];
    }
    *ld = s->n;
    return w;
}

static void attn_forward_part(int part, int parts, void *arg)
{
    const struct attn *s = arg;
    const float *mask = (const float *)(intptr_t)s->mask;
    float scale = (float)s->scale;
    for (int64_t i = s->count * part / parts; i < s->count * (part + 1) / parts; i++) {
        float *at[N_MATS];
        head(s, i, at);
        for (int64_t r = 0; r < s->m; r++) {                       /* Q scale */
            const float *q = at[Q] + r * s->ld[Q];
            float *qs = at[QS] + r * s->ld[QS];
#pragma omp simd
            for (int64_t j = 0; j < s->d; j++)
                qs[j] = q[j] * scale;
        }
        const float *kt = transposed(s, part, at[K], s->n, s->d, s->ld[K]);
        sgemm_call(NO_TRANS, NO_TRANS, s->m, s->n, s->d, 1.0f, at[QS], s->ld[QS], kt,  /* S */
                   s->n, at[A], s->ld[A]);
        for (int64_t r = 0; r < s->m; r++)                         /* A = softmax(S + M) */
            softmax_row(at[A] + r * s->ld[A], mask ? mask + r * s->ld_mask : NULL, s->n);
        int64_t ldw;
        const float *w = weights(s, at, part, &ldw);               /* A, or A' = A D */
        sgemm_call(NO_TRANS, NO_TRANS, s->m, s->dv, s->n, 1.0f, w, ldw, at[V], s->ld[V],  /* Z */
                   at[Z], s->ld[Z]);
    }
}

static void attn_backward_part(int part, int parts, void *arg)
{
    const struct attn *s = arg;
    for (int64_t i = s->count * part / parts; i < s->count * (part + 1) / parts; i++) {
        float *at[N_MATS];
        head(s, i, at);
        if (s->base[DV]) {                                         /* dV = A'^T g */
            int64_t ldw;
            const float *w = weights(s, at, part, &ldw);
            sgemm_call(TRANS, NO_TRANS, s->n, s->dv, s->m, 1.0f, w, ldw, at[G], s->ld[G],
                       at[DV], s->ld[DV]);
        }
        const float *vt = transposed(s, part, at[V], s->n, s->dv, s->ld[V]);
        sgemm_call(NO_TRANS, NO_TRANS, s->m, s->n, s->dv, 1.0f, at[G], s->ld[G], vt,  /* dA' */
                   s->n, at[DS], s->ld[DS]);
        for (int64_t r = 0; r < s->m; r++) {                       /* dS = A (dA - rowsum) */
            float *ds = at[DS] + r * s->ld[DS];
            if (s->base[KEEP]) {                                   /* dA = dA' D */
                const float *keep = at[KEEP] + r * s->ld[KEEP];
#pragma omp simd
                for (int64_t j = 0; j < s->n; j++)
                    ds[j] *= keep[j];
            }
            softmax_grad_row(ds, at[A] + r * s->ld[A], s->n);
        }
        if (s->base[DQ])                                           /* dQ = dS K scale */
            sgemm_call(NO_TRANS, NO_TRANS, s->m, s->d, s->n, (float)s->scale, at[DS],
                       s->ld[DS], at[K], s->ld[K], at[DQ], s->ld[DQ]);
        if (s->base[DK])                                           /* dK = dS^T (Q scale) */
            sgemm_call(TRANS, NO_TRANS, s->n, s->d, s->m, 1.0f, at[DS], s->ld[DS], at[QS],
                       s->ld[QS], at[DK], s->ld[DK]);
    }
}

/* The heads cut between the pool's threads (each head's products small enough that OpenBLAS
 * runs them on the calling thread: pool.py checks), or all on this thread when the pool is
 * taken. */
void tgx_attention(const struct attn *s, int backward, int parts)
{
    part_fn fn = backward ? attn_backward_part : attn_forward_part;
    if (!run_parts(fn, capped(parts), (void *)s))
        fn(0, 1, (void *)s);
}

/* ---- GELU (tanh form), element-wise on both cores ---------------------------------------- */

/* The tanh GELU's forward and backward in float32 (ops/fused.py holds the numpy path, the
 * reference, and kernels.py the numba loops used without the pool). numba's loops leave tanh
 * to numpy (its own is scalar): three passes where this is one, and a Python-thread split of
 * a GPT CPU config block's 393k values cost more than it saved, since those threads park
 * this pool. Here the values are cut between the pool's threads at ~1 us a hand-off. */

/* tanh(u) within ~2 ulp: for |u| < 0.625 the odd polynomial u + u^3 P(u^2) (a least-squares
 * fit, within 5e-9 of tanh there), above it (1 - e) / (1 + e) with e = e^(-2|u|) <= 0.29, so
 * neither form cancels; NaN stays NaN, +-inf gives +-1. Both are computed and one kept, so
 * the loops that call it vectorise. */
static inline float tanh_f(float u)
{
    float a = fabsf(u);
    float e = exp_nonpositive(-2.0f * a);
    float far = (1.0f - e) / (1.0f + e);
    float z = a * a;
    float near = a + a * z * ((((-0.0057049887f * z + 0.020639089f) * z - 0.053739716f) * z
                               + 0.13331442f) * z - 0.33333282f);
    return copysignf(a < 0.625f ? near : far, u);
}

struct gelu { const float *x, *t, *g; float *out, *out2; int64_t n; };

#define GELU_C1 0.7978845608028654f                 /* sqrt(2 / pi) */
#define GELU_C3 (0.044715f * GELU_C1)

static void gelu_forward_part(int part, int parts, void *arg)
{
    const struct gelu *s = arg;
    int64_t lo, hi;
    share(s->n, part, parts, &lo, &hi);
    const float *x = s->x;
    float *t = s->out, *y = s->out2;
#pragma omp simd
    for (int64_t i = lo; i < hi; i++) {
        float xi = x[i];
        float ti = tanh_f((xi * xi * GELU_C3 + GELU_C1) * xi);  /* sqrt(2/pi)(x + 0.044715x^3) */
        t[i] = ti;
        y[i] = (ti + 1.0f) * xi * 0.5f;
    }
}

static void gelu_backward_part(int part, int parts, void *arg)
{
    const struct gelu *s = arg;
    int64_t lo, hi;
    share(s->n, part, parts, &lo, &hi);
    const float *x = s->x, *t = s->t, *g = s->g;
    float *d = s->out;
#pragma omp simd
    for (int64_t i = lo; i < hi; i++) {
        float xi = x[i], ti = t[i];
        float du = GELU_C1 + 3.0f * GELU_C3 * xi * xi;      /* sqrt(2/pi)(1 + 3*0.044715x^2) */
        d[i] = g[i] * (0.5f * (1.0f + ti) + 0.5f * xi * (1.0f - ti * ti) * du);
    }
}

/* t <- tanh(...), y <- GELU(x) over n floats (backward: d <- g GELU'(x) from x, t), in
 * `parts` shares at once, or on this thread when the pool is taken */
void tgx_gelu_tanh(const float *x, float *t, float *y, int64_t n, int parts)
{
    struct gelu s = {x, NULL, NULL, t, y, n};
    if (!run_parts(gelu_forward_part, capped(parts), &s))
        gelu_forward_part(0, 1, &s);
}

void tgx_gelu_tanh_grad(const float *x, const float *t, const float *g, float *d, int64_t n,
                        int parts)
{
    struct gelu s = {x, t, g, d, NULL, n};
    if (!run_parts(gelu_backward_part, capped(parts), &s))
        gelu_backward_part(0, 1, &s);
}

/* ---- softmax over the last axis, rows cut between the threads ----------------------------- */

/* softmax and its backward on (rows, n) float32 with attention's row loops above (its own
 * exp): for the softmax a model calls op by op (F.softmax on attention's scores), which the
 * numba loops run around numpy's exp on one thread. out may be x (g), in place. */
struct rows { const float *x, *s; float *out; int64_t rows, n; };   /* s: the backward's */

static void softmax_part(int part, int parts, void *arg)
{
    const struct rows *j = arg;
    for (int64_t i = j->rows * part / parts; i < j->rows * (part + 1) / parts; i++) {
        float *out = j->out + i * j->n;
        if (out != j->x + i * j->n)
            memcpy(out, j->x + i * j->n, (size_t)j->n * sizeof(float));
        if (j->s)
            softmax_grad_row(out, j->s + i * j->n, j->n);
        else
            softmax_row(out, NULL, j->n);
    }
}

/* out <- softmax(x), or with s given its backward out <- s (g - rowsum(g s)) with g in x,
 * row by row */
void tgx_softmax(const float *x, const float *s, float *out, int64_t rows, int64_t n,
                 int parts)
{
    struct rows j = {x, s, out, rows, n};
    parts = capped(parts);
    if (parts > rows)
        parts = (int)rows;
    if (!run_parts(softmax_part, parts, &j))
        softmax_part(0, 1, &j);
}

/* ---- the Adam update, element-wise on both cores ----------------------------------------- */

/* One Adam/AdamW step in place over n float32 values, the numba loop's formula and
 * coefficients (optim/adam.py holds the reference, numpy passes): m <- b1 m + c1 g,
 * v <- b2 v + c2 g^2, p <- shrink p + step m / (sqrt(v) + eps), each value on one thread,
 * the values cut between the threads. */
struct adam { float *p, *m, *v; const float *g; int64_t n; float b1, c1, b2, c2, shrink, eps, step; };

static void adam_part(int part, int parts, void *arg)
{
    const struct adam *a = arg;
    int64_t lo, hi;
    share(a->n, part, parts, &lo, &hi);
    float *restrict p = a->p, *restrict m = a->m, *restrict v = a->v;
    const float *restrict g = a->g;
#pragma omp simd
    for (int64_t i = lo; i < hi; i++) {
        float gi = g[i];
        float mi = m[i] * a->b1 + gi * a->c1;
        float vi = v[i] * a->b2 + gi * gi * a->c2;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * a->shrink + mi / (sqrtf(vi) + a->eps) * a->step;
    }
}

void tgx_adam(float *p, const float *g, float *m, float *v, int64_t n, const float *k,
              int parts)
{
    struct adam a = {p, m, v, g, n, k[0], k[1], k[2], k[3], k[4], k[5], k[6]};
    if (!run_parts(adam_part, capped(parts), &a))
        adam_part(0, 1, &a);
}

/* ---- LayerNorm over the last axis, rows cut between the threads ------------------------- */

/* LayerNorm's rows and derivative in float32 (core/rows.py holds the formula and the
 * reference, which computes a float32 row in float64 and rounds once; kernels.py the numba
 * loops, float64 throughout, which run without the pool). float64 arithmetic runs at a
 * quarter of float32's width here and made both slower than one numba thread (tried twice),
 * so the statistics are float32 sums kept exact where it matters: m0 = sum(x)/n, then
 * c = sum(x - m0)/n corrects it (x - m0 is exact for the values near m0, by Sterbenz's lemma:
 * a row of nearly equal values keeps its digits), and xc = (x - m0) - c. A row whose float32
 * sums leave float32's range (|x| past ~1e18 squared, ~1e36 summed) or hold an inf or NaN is
 * computed in float64 instead, as the reference does. */
typedef float f16v __attribute__((vector_size(64)));    /* lowered to what the CPU has */

static inline f16v load16(const float *x)
{
    f16v v;
    memcpy(&v, x, sizeof v);
    return v;
}

static inline void store16(float *x, f16v v)
{
    memcpy(x, &v, sizeof v);
}

/* the sum of the 16 lanes as a tree (four dependent additions, not sixteen: a row of 128
 * takes three of these, and a chain of sixteen made them most of the row's time) */
static inline float hsum16(f16v v)
{
    float t[16];
    memcpy(t, &v, sizeof t);
    for (int l = 0; l < 8; l++)
        t[l] += t[l + 8];
    for (int l = 0; l < 4; l++)
        t[l] += t[l + 4];
    return (t[0] + t[2]) + (t[1] + t[3]);
}

#define SPLAT16(v) ((v) - (f16v){0})

/* m0, c and rstd of a row (xc = (x - m0) - c, rstd = 1/sqrt(mean(xc^2) + eps)); 0 when the
 * sum of squares overflowed (the caller then takes the float64 path) */
static int ln_stats(const float *x, int64_t n, double eps, float *m0, float *c, float *rstd)
{
    f16v a0 = {0}, a1 = {0};
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        a0 += load16(x + j);
        a1 += load16(x + j + 16);
    }
    for (; j + 16 <= n; j += 16)
        a0 += load16(x + j);
    float s = hsum16(a0 + a1);
    for (; j < n; j++)
        s += x[j];
    float m = s / (float)n;
    f16v mv = SPLAT16(m);
    a0 = a1 = (f16v){0};
    for (j = 0; j + 32 <= n; j += 32) {
        a0 += load16(x + j) - mv;
        a1 += load16(x + j + 16) - mv;
    }
    for (; j + 16 <= n; j += 16)
        a0 += load16(x + j) - mv;
    float r = hsum16(a0 + a1);
    for (; j < n; j++)
        r += x[j] - m;
    float cc = r / (float)n;
    f16v cv = SPLAT16(cc);
    a0 = a1 = (f16v){0};
    for (j = 0; j + 32 <= n; j += 32) {
        f16v d0 = (load16(x + j) - mv) - cv, d1 = (load16(x + j + 16) - mv) - cv;
        a0 += d0 * d0;
        a1 += d1 * d1;
    }
    for (; j + 16 <= n; j += 16) {
        f16v d0 = (load16(x + j) - mv) - cv;
        a0 += d0 * d0;
    }
    float v = hsum16(a0 + a1);
    for (; j < n; j++) {
        float d = (x[j] - m) - cc;
        v += d * d;
    }
    *m0 = m;
    *c = cc;
    *rstd = (float)(1.0 / sqrt((double)v / (double)n + eps));
    return isfinite(s) && isfinite(v);  /* else float64: a sum or a square past float32's
                                           range, or an inf or NaN (NaN there too) */
}

/* the float64 statistics of a row whose float32 sums leave float32's range */
static void ln_stats_wide(const float *x, int64_t n, double eps, double *mean, double *rstd)
{
    double s = 0.0, v = 0.0;
    for (int64_t j = 0; j < n; j++)
        s += x[j];
    double m = s / (double)n;
    for (int64_t j = 0; j < n; j++)
        v += (x[j] - m) * (x[j] - m);
    *mean = m;
    *rstd = 1.0 / sqrt(v / (double)n + eps);
}

struct ln {
    const float *x, *w, *b, *g;    /* w, b NULL: none (the backward's w never); g: backward */
    float *y;                      /* forward: y; backward: dx */
    float *sums;                   /* backward: per part, dw (n) then db (n) */
    int64_t rows, n;
    double eps;
};

static void ln_forward_row(const struct ln *s, int64_t i)
{
    const float *x = s->x + i * s->n, *w = s->w, *b = s->b;
    float *y = s->y + i * s->n;
    int64_t n = s->n;
    float m, c, r;
    if (!ln_stats(x, n, s->eps, &m, &c, &r)) {
        double mean, rstd;
        ln_stats_wide(x, n, s->eps, &mean, &rstd);
        for (int64_t j = 0; j < n; j++) {
            double t = (x[j] - mean) * rstd * (w ? w[j] : 1.0);
            y[j] = (float)(b ? t + b[j] : t);          /* (no + 0.0: a -0.0 stays -0.0) */
        }
        return;
    }
    if (w && b) {
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            y[j] = ((x[j] - m) - c) * r * w[j] + b[j];
    } else if (w) {
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            y[j] = ((x[j] - m) - c) * r * w[j];
    } else {
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            y[j] = ((x[j] - m) - c) * r;
    }
}

static void ln_forward_part(int part, int parts, void *arg)
{
    const struct ln *s = arg;
    for (int64_t i = s->rows * part / parts; i < s->rows * (part + 1) / parts; i++)
        ln_forward_row(s, i);
}

/* dx = rstd (g w - mean(g w) - xhat mean(g w xhat)) a row at a time, the statistics
 * recomputed from x while the row is in cache; dw += g xhat and db += g into this part's
 * own sums (pool.py adds the parts in order) */
static void ln_backward_part(int part, int parts, void *arg)
{
    const struct ln *s = arg;
    const int64_t n = s->n;
    const float *w = s->w;
    float *gw = s->sums + (int64_t)part * 2 * n, *gb = gw + n;
    for (int64_t i = s->rows * part / parts; i < s->rows * (part + 1) / parts; i++) {
        const float *x = s->x + i * n, *g = s->g + i * n;
        float *dx = s->y + i * n;
        float m, c, r;
        if (!ln_stats(x, n, s->eps, &m, &c, &r)) {
            double mean, rstd, a = 0.0, k = 0.0;
            ln_stats_wide(x, n, s->eps, &mean, &rstd);
            for (int64_t j = 0; j < n; j++) {
                a += (double)g[j] * w[j];
                k += (double)g[j] * w[j] * ((x[j] - mean) * rstd);
            }
            a /= (double)n;
            k /= (double)n;
            for (int64_t j = 0; j < n; j++) {
                double h = (x[j] - mean) * rstd;
                dx[j] = (float)(rstd * ((double)g[j] * w[j] - a - h * k));
                gw[j] += (float)(g[j] * h);
                gb[j] += g[j];
            }
            continue;
        }
        f16v mv = SPLAT16(m), cv = SPLAT16(c), rv = SPLAT16(r), av = {0}, kv = {0};
        int64_t j = 0;
        for (; j + 16 <= n; j += 16) {
            f16v gh = load16(g + j) * load16(w + j);
            av += gh;
            kv += gh * (((load16(x + j) - mv) - cv) * rv);
        }
        float a = hsum16(av), k = hsum16(kv);
        for (; j < n; j++) {
            float gh = g[j] * w[j];
            a += gh;
            k += gh * (((x[j] - m) - c) * r);
        }
        a /= (float)n;                                  /* mean(g w) */
        k /= (float)n;                                  /* mean(g w xhat) */
        f16v av2 = SPLAT16(a), kv2 = SPLAT16(k);
        for (j = 0; j + 16 <= n; j += 16) {
            f16v gg = load16(g + j), h = ((load16(x + j) - mv) - cv) * rv;
            store16(dx + j, rv * (gg * load16(w + j) - av2 - h * kv2));
            store16(gw + j, load16(gw + j) + gg * h);
            store16(gb + j, load16(gb + j) + gg);
        }
        for (; j < n; j++) {
            float h = ((x[j] - m) - c) * r;
            dx[j] = r * (g[j] * w[j] - a - h * k);
            gw[j] += g[j] * h;
            gb[j] += g[j];
        }
    }
}

/* forward: y <- LayerNorm of each row of x (rows, n); backward (g given): dx into y and the
 * column sums of g xhat and g into sums, (parts, 2, n) zeros, part by part. The rows are cut
 * into `parts` blocks the same way whether the blocks run at once or, when the pool is taken
 * or OpenBLAS held to fewer threads, one after the other here, so the sums' bits never
 * depend on which. */
void tgx_layer_norm(const float *x, const float *w, const float *b, const float *g, float *y,
                    float *sums, int64_t rows, int64_t n, double eps, int parts)
{
    struct ln s = {x, w, b, g, y, sums, rows, n, eps};
    part_fn fn = g ? ln_backward_part : ln_forward_part;
    if (capped(parts) < parts || !run_parts(fn, parts, &s))
        for (int p = 0; p < parts; p++)
            fn(p, parts, &s);
}

/* ---- set-up --------------------------------------------------------------------------- */

int tgx_setup(int threads, long poll_us, void *s, void *d, int is_ilp64, void *get_threads,
              void *set_threads)
{
    n_threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    poll_ns = poll_us * 1000L;
    sgemm = s;
    dgemm = d;
    ilp64 = is_ilp64;
    blas_threads = (get_threads_fn)get_threads;
    set_blas_threads = (set_threads_fn)set_threads;
    return n_threads;
}

long tgx_counter(int which)            /* 0: tasks the pool ran, 1: OpenBLAS jobs on threads
                                          made for them (the pool was taken) */
{
    return which == 0 ? atomic_load(&n_tasks) : atomic_load(&n_spawned);
}
