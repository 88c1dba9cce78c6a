/* `cudnn`: cuDNN's scaled-dot-product attention forward (SDPA), built through the cuDNN
 * frontend's C++ graph API, as a decode step: q is [B*W, h, s_q = 1, d] and attends to
 * all L keys (no causal mask), no softmax stats, the softmax scale as a value.
 *
 * Contiguous cache [B*W, 2, g, L, d]: K and V are strided tensors [B*W, g, L, d] with
 * strides [2gLd, Ld, d, 1], V g*L*d elements after K; fewer kv heads than query heads
 * is cuDNN's own GQA/MQA. Paged cache [blocks, 2, g, S, d]: cuDNN's paged attention,
 * K and V containers [blocks, g, S, d] with block stride 2gSd (V g*S*d elements after
 * K), our block table [B*W, max_blocks] as both page tables [B*W, 1, max_blocks, 1],
 * and the padding mask cuDNN requires with them (sequence lengths 1 and L).
 *
 * libcudnn is opened at run time (the frontend's dynamic loading), so attnbench links
 * without it: ATTNBENCH_CUDNN_LIB (the library or its folder) if set, else the
 * loader's search for libcudnn.so.9, else the CUDA toolkit's lib64. Where it cannot be
 * loaded, or cuDNN rejects the graph when setup builds it, the row is `unsupported`
 * with cuDNN's message (ATTN_SETUP_UNSUPPORTED). setup builds the graph, checks
 * support, builds the plan (the frontend's choice of SDPA implementation, heuristics
 * mode A, the first plan that builds: cuDNN's recommended settings; the composite
 * implementation where the chosen one finds no plan) and allocates its workspace;
 * launch only executes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer_stub.h"

#define CUDNN_PEER_SUMMARY "cuDNN's SDPA forward (graph API, s_q = 1) on the contiguous or paged cache"
#define CUDNN_PEER_PACKAGE "cuDNN frontend 1.32.0"

#ifdef ATTN_HAVE_CUDNN_FE
/* Host code only: nvcc's device passes (one per target) skip the frontend's headers,
 * which would otherwise take most of this file's compile time. */
#ifndef __CUDA_ARCH__

#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#include <dlfcn.h>
#include <sys/stat.h>
#include <cstring> /* the frontend without its JSON library needs it included first */
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
/* Warnings inside the frontend's headers, not ours to mend: nvcc's front end sees an
 * unreachable loop in a macro and a discarded [[nodiscard]] result, gcc an unused
 * static function. Its JSON serialisation (plan caches, logging) is left out. */
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#pragma nv_diag_suppress 128
#pragma nv_diag_suppress 2810
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <cudnn_frontend.h>
#pragma GCC diagnostic pop
#pragma nv_diag_default 128
#pragma nv_diag_default 2810

namespace fe = cudnn_frontend;

/* The frontend's dynamic loading resolves every cuDNN call in this handle. */
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
}

extern "C" const attn_kernel_t kernel_cudnn;

#define CUDNN_SONAME "libcudnn.so.9"
#define CUDNN_TOOLKIT_LIB "/usr/local/cuda/lib64/" CUDNN_SONAME

/* Variant-pack uids of the graph's tensors. */
enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_SEQ_Q, UID_SEQ_KV, UID_PAGE_K, UID_PAGE_V };

/* cuDNN's own workspace is known only once the plan is built; this bounds it for the
 * memory plan: the handle and its lazily loaded engines, and split-KV partials (an
 * fp32 row of d plus max and sum for each query head, stream and split) of up to this
 * many splits. An allocation past the bound still fails cleanly, as `oom`. */
#define CUDNN_HANDLE_ALLOWANCE_BYTES ((size_t)128 << 20)
#define CUDNN_WORKSPACE_SPLITS 64

typedef struct cudnn_state {
    cudnnHandle_t handle;
    std::shared_ptr<fe::graph::Graph> graph;
    std::unordered_map<int64_t, void *> pack;   /* uid -> device pointer */
    void *workspace;
    int32_t *seq_lens;                          /* paged: [2][B*W], 1 then L */
} cudnn_state_t;

/* Copies msg into why on one line (cuDNN's messages span several). */
static void cudnn_why(char *why, const char *step, const std::string &msg)
{
    snprintf(why, ATTN_WHY_LEN, "cuDNN %s: %s", step, msg.c_str());
    for (char *c = why; *c; ++c)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

/* Opens libcudnn once per process. Returns NULL, or why it could not (the same text
 * on every later call). */
static const char *cudnn_open(void)
{
    static int tried = 0;
    static std::string failure;
    if (tried) return failure.empty() ? NULL : failure.c_str();
    tried = 1;
    std::string candidates[2];
    int n = 0;
    const char *env = getenv("ATTNBENCH_CUDNN_LIB");
    if (env && *env) {
        struct stat st;
        std::string path = env;
        if (stat(env, &st) == 0 && S_ISDIR(st.st_mode)) path += std::string("/") + CUDNN_SONAME;
        candidates[n++] = path;
    } else {
        candidates[n++] = CUDNN_SONAME;
        candidates[n++] = CUDNN_TOOLKIT_LIB;
    }
    std::string errors;
    void *h = NULL;
    int opened = 0;
    for (int i = 0; i < n && !h; ++i) {
        h = dlopen(candidates[i].c_str(), RTLD_NOW | RTLD_LOCAL);
        if (h) opened = i;
        else errors += std::string(errors.empty() ? "" : "; ") + dlerror();
    }
    if (!h) {
        failure = "cannot load " + errors + " (set ATTNBENCH_CUDNN_LIB to libcudnn.so.9 or its folder)";
        return failure.c_str();
    }
    typedef size_t (*version_fn)(void);
    version_fn version = (version_fn)dlsym(h, "cudnnGetVersion");
    if (!version) {
        failure = "no cudnnGetVersion in " + candidates[opened];
        dlclose(h);
        return failure.c_str();
    }
    size_t v = version();
    Dl_info info;
    const char *where = dladdr((void *)version, &info) && info.dli_fname ? info.dli_fname : "?";
    if (v < 90000) {
        failure = "cuDNN " + std::to_string(v) + " at " + where + " is older than the cuDNN 9 this peer needs";
        dlclose(h);
        return failure.c_str();
    }
    fe::cudnn_dlhandle = h;
    /* which library the rows ran on: one line per process */
    fprintf(stderr, "cudnn: cuDNN %zu.%zu.%zu from %s\n", v / 10000, v / 100 % 100, v % 100, where);
    return NULL;
}

/* The static part of cuDNN's support surface. Its head_dim rule (a multiple of 8, at
 * most 256 on Hopper) is the one every problem obeys already; what else cuDNN declines
 * for a shape it says when setup builds the graph. */
static const char *cudnn_unsupported(const problem_t *p)
{
    if (problem_ragged(p))
        return "cuDNN's SDPA is run here with one sequence length for the batch, not ragged --ctx-dist lengths";
    if (p->q_len > 1)
        return "the cuDNN graph is built for one query token per stream (no --q-len > 1)";
    if (p->dtype != DTYPE_FP16 && p->dtype != DTYPE_BF16)
        return "cuDNN's SDPA takes fp16 and bf16 (and fp8) inputs, not fp32";
    if (p->kv_quant != KV_QUANT_NONE)
        return "cuDNN's SDPA graph is built here for a cache in the query dtype: no 8-bit cache (--kv-dtype fp8|int8)";
    if (p->indirection)
        return "cuDNN's SDPA reads K/V through strides or a page table, not a per-token cache indirection (--indirection)";
    if (p->multi_block == MULTI_BLOCK_ON || p->splits > 1)
        return "cuDNN chooses its own work split: --multi-block on and --splits cannot be imposed on it";
    return NULL;
}

static kv_layout_t cudnn_layout(const problem_t *p)
{
    return p->cache == CACHE_PAGED ? LAYOUT_PAGED : LAYOUT_CONTIGUOUS;
}

/* One launch of cuDNN's graph; any split of the keys is cuDNN's own choice, unseen. */
static void cudnn_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    (void)dev;
    plan->runs = &kernel_cudnn;
    plan->split = split_plan_fixed(problem_keys(p), 1, 1);
    plan->variant = 0;
}

static size_t cudnn_no_workspace(const problem_t *p, const attn_plan_t *plan)
{
    (void)p;
    (void)plan;
    return 0;
}

static size_t cudnn_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    double rows = (double)problem_streams(p) * p->heads;
    double partials = rows * (p->head_dim + 2) * sizeof(float) * CUDNN_WORKSPACE_SPLITS;
    double seq_lens = 2.0 * problem_streams(p) * sizeof(int32_t);
    return CUDNN_HANDLE_ALLOWANCE_BYTES + (size_t)partials + (size_t)seq_lens;
}

/* K and V as the cache holds them (every stream's replicated context on a contiguous
 * cache, the shared blocks once on a paged one), q, out, the page table and, paged,
 * the two sequence-length arrays. cuDNN's scratch traffic is not known outside it and
 * is not modelled (workspace_bytes 0). */
static attn_io_t cudnn_io(const problem_t *p, const attn_plan_t *plan)
{
    (void)plan;
    double seq_lens = p->cache == CACHE_PAGED ? 2.0 * problem_streams(p) * sizeof(int32_t) : 0.0;
    double tables = io_table_bytes(p) + seq_lens;
    attn_io_t io;
    io.bytes = io_kv_bytes_stored(p) + io_qo_bytes(p) + tables;
    io.unique_bytes = io_kv_bytes_unique(p) + io_qo_bytes(p) + tables;
    io.flops = io_flops(p);
    io.workspace_bytes = 0.0;
    return io;
}

/* A [n, c, s, d] tensor with row stride d and the given batch and head strides. */
static std::shared_ptr<fe::graph::Tensor_attributes> cudnn_tensor(fe::graph::Graph &g, const char *name,
                                                                  int64_t uid, int64_t n, int64_t c, int64_t s,
                                                                  int64_t d, int64_t batch_stride,
                                                                  int64_t head_stride)
{
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({n, c, s, d})
                        .set_stride({batch_stride, head_stride, d, 1}));
}

/* An int32 [n, 1, len, 1] tensor, rows len apart (page tables, sequence lengths). */
static std::shared_ptr<fe::graph::Tensor_attributes> cudnn_int_tensor(fe::graph::Graph &g, const char *name,
                                                                      int64_t uid, int64_t n, int64_t len)
{
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({n, 1, len, 1})
                        .set_stride({len, len, 1, 1})
                        .set_data_type(fe::DataType_t::INT32));
}

/* The decode step as a graph on SDPA implementation impl, and its variant pack, for
 * the buffers of a. */
static void cudnn_describe(cudnn_state_t *st, const attn_args_t *a, int sm_version,
                           fe::AttentionImplementation_t impl)
{
    const problem_t *p = &a->problem;
    const int64_t streams = problem_streams(p), h = p->heads, g = p->kv_heads, d = p->head_dim;
    const int64_t keys = problem_keys(p);
    const size_t es = dtype_size(p->dtype);
    auto graph = std::make_shared<fe::graph::Graph>();
    graph->set_io_data_type(p->dtype == DTYPE_BF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    /* from our own device query: the frontend would otherwise open a CUDA runtime of
     * its own to ask */
    graph->set_sm_version(sm_version);

    auto Q = cudnn_tensor(*graph, "Q", UID_Q, streams, h, 1, d, h * d, d);
    auto options = fe::graph::SDPA_attributes()
                       .set_name("decode")
                       .set_generate_stats(false)
                       .set_attn_scale((float)problem_scale(p))
                       .set_implementation(impl);
    std::shared_ptr<fe::graph::Tensor_attributes> K, V;
    const char *kv = (const char *)a->kv;
    if (p->cache == CACHE_PAGED) {
        const int64_t S = p->block_size, blocks = a->num_blocks, table = a->geom.max_blocks_per_seq;
        K = cudnn_tensor(*graph, "K_container", UID_K, blocks, g, S, d, 2 * g * S * d, S * d);
        V = cudnn_tensor(*graph, "V_container", UID_V, blocks, g, S, d, 2 * g * S * d, S * d);
        auto seq_q = cudnn_int_tensor(*graph, "seq_len_q", UID_SEQ_Q, streams, 1);
        auto seq_kv = cudnn_int_tensor(*graph, "seq_len_kv", UID_SEQ_KV, streams, 1);
        options.set_padding_mask(true).set_seq_len_q(seq_q).set_seq_len_kv(seq_kv);
        options.set_paged_attention_k_table(cudnn_int_tensor(*graph, "page_table_k", UID_PAGE_K, streams, table));
        options.set_paged_attention_v_table(cudnn_int_tensor(*graph, "page_table_v", UID_PAGE_V, streams, table));
        options.set_paged_attention_max_seq_len_kv((int)keys);
        st->pack[UID_V] = (void *)(kv + es * (size_t)(g * S * d));
        st->pack[UID_SEQ_Q] = st->seq_lens;
        st->pack[UID_SEQ_KV] = st->seq_lens + streams;
        st->pack[UID_PAGE_K] = (void *)a->block_table;
        st->pack[UID_PAGE_V] = (void *)a->block_table;
    } else {
        K = cudnn_tensor(*graph, "K", UID_K, streams, g, keys, d, 2 * g * keys * d, keys * d);
        V = cudnn_tensor(*graph, "V", UID_V, streams, g, keys, d, 2 * g * keys * d, keys * d);
        st->pack[UID_V] = (void *)(kv + es * (size_t)(g * keys * d));
    }
    auto outputs = graph->sdpa(Q, K, V, std::move(options)); /* O, and no stats */
    outputs[0]->set_output(true).set_uid(UID_O).set_dim({streams, h, 1, d}).set_stride({h * d, d, d, 1});
    st->pack[UID_Q] = (void *)a->q;
    st->pack[UID_K] = (void *)kv;
    st->pack[UID_O] = a->out;
    st->graph = graph;
}

/* 1, with cuDNN's reason in why, where step failed. */
static int cudnn_failed(fe::error_t e, const char *step, char *why)
{
    if (e.is_good()) return 0;
    cudnn_why(why, step, e.get_message());
    return 1;
}

/* validate, operation graph, heuristics (mode A), support check, the first plan that
 * builds. Returns 0, or -1 with cuDNN's reason in why. */
static int cudnn_build(cudnn_state_t *st, char *why)
{
    fe::graph::Graph &g = *st->graph;
    if (cudnn_failed(g.validate(), "validate", why) ||
        cudnn_failed(g.build_operation_graph(st->handle), "build_operation_graph", why) ||
        cudnn_failed(g.create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans", why) ||
        cudnn_failed(g.check_support(), "check_support", why) ||
        cudnn_failed(g.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans", why))
        return -1;
    return 0;
}

/* The graph, built. AUTO, the frontend's choice, takes the unified SDPA engine
 * wherever the library's version has the features asked for, before any engine is
 * asked for a plan; where that finds none, cuDNN's composite SDPA (what AUTO takes
 * on older libraries) is tried before the shape is given up, and a line on stderr
 * says so. Returns 0, or -1 with both reasons in why. */
static int cudnn_build_graph(cudnn_state_t *st, const attn_args_t *a, int sm_version, char *why)
{
    char first[ATTN_WHY_LEN];
    cudnn_describe(st, a, sm_version, fe::AttentionImplementation_t::AUTO);
    if (cudnn_build(st, first) == 0) return 0;
    char second[ATTN_WHY_LEN];
    cudnn_describe(st, a, sm_version, fe::AttentionImplementation_t::COMPOSITE);
    if (cudnn_build(st, second) != 0) {
        snprintf(why, ATTN_WHY_LEN, "%.120s; composite: %.120s", first, second);
        return -1;
    }
    char what[160];
    problem_describe(&a->problem, what, sizeof what);
    fprintf(stderr, "cudnn: %s: composite SDPA, the default found no plan (%.120s)\n", what, first);
    return 0;
}

static void cudnn_state_free(cudnn_state_t *st)
{
    if (!st) return;
    st->graph.reset();
    if (st->handle) fe::detail::destroy_handle(st->handle);
    if (st->workspace) cudaFree(st->workspace);
    if (st->seq_lens) cudaFree(st->seq_lens);
    delete st;
}

/* The paged graph's sequence lengths: 1 query and L keys for every stream. */
static cudaError_t cudnn_upload_seq_lens(cudnn_state_t *st, const problem_t *p)
{
    const int streams = problem_streams(p);
    cudaError_t err = cudaMalloc((void **)&st->seq_lens, 2 * (size_t)streams * sizeof(int32_t));
    if (err != cudaSuccess) return err;
    int32_t *host = (int32_t *)malloc(2 * (size_t)streams * sizeof(int32_t));
    if (!host) return cudaErrorMemoryAllocation;
    for (int i = 0; i < streams; ++i) {
        host[i] = 1;
        host[streams + i] = problem_keys(p);
    }
    err = cudaMemcpy(st->seq_lens, host, 2 * (size_t)streams * sizeof(int32_t), cudaMemcpyHostToDevice);
    free(host);
    return err;
}

/* Everything but the library's own failures, which are turned into a reason. */
static cudaError_t cudnn_setup_state(cudnn_state_t *st, attn_args_t *a)
{
    int device = 0, major = 0, minor = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    if (err == cudaSuccess && a->problem.cache == CACHE_PAGED) err = cudnn_upload_seq_lens(st, &a->problem);
    if (err != cudaSuccess) return err;
    cudnnStatus_t status = fe::detail::create_handle(&st->handle);
    if (status != CUDNN_STATUS_SUCCESS) {
        st->handle = NULL;
        cudnn_why(a->why, "cudnnCreate", fe::detail::get_error_string(status));
        return ATTN_SETUP_UNSUPPORTED;
    }
    if (cudnn_build_graph(st, a, major * 10 + minor, a->why) != 0) return ATTN_SETUP_UNSUPPORTED;
    int64_t bytes = 0;
    fe::error_t e = st->graph->get_workspace_size(bytes);
    if (e.is_bad()) {
        cudnn_why(a->why, "get_workspace_size", e.get_message());
        return ATTN_SETUP_UNSUPPORTED;
    }
    return bytes > 0 ? cudaMalloc(&st->workspace, (size_t)bytes) : cudaSuccess;
}

static cudaError_t cudnn_setup(attn_args_t *a)
{
    const char *why = cudnn_open();
    if (why) {
        snprintf(a->why, sizeof a->why, "%s", why);
        return ATTN_SETUP_UNSUPPORTED;
    }
    cudnn_state_t *st = new (std::nothrow) cudnn_state_t();
    if (!st) return cudaErrorMemoryAllocation;
    cudaError_t err;
    try {
        err = cudnn_setup_state(st, a);
    } catch (const std::exception &x) {
        /* the frontend throws where no SDPA implementation takes the graph, or a
         * symbol is missing from an older library */
        cudnn_why(a->why, "graph", x.what());
        err = ATTN_SETUP_UNSUPPORTED;
    }
    if (err != cudaSuccess) {
        cudnn_state_free(st);
        return err;
    }
    a->state = st;
    return cudaSuccess;
}

static cudaError_t cudnn_launch(attn_args_t *a, cudaStream_t stream)
{
    cudnn_state_t *st = (cudnn_state_t *)a->state;
    if (!st) {
        fprintf(stderr, "cudnn: launch without setup\n");
        return cudaErrorInvalidValue;
    }
    /* the variant pack holds the buffers setup saw */
    bool paged = a->problem.cache == CACHE_PAGED;
    if (st->pack[UID_Q] != a->q || st->pack[UID_O] != a->out || st->pack[UID_K] != a->kv ||
        (paged && st->pack[UID_PAGE_K] != a->block_table)) {
        fprintf(stderr, "cudnn: q/out/kv/block table buffers changed since setup; run setup again\n");
        return cudaErrorInvalidValue;
    }
    try {
        cudnnStatus_t status = fe::detail::set_stream(st->handle, stream);
        if (status != CUDNN_STATUS_SUCCESS) {
            fprintf(stderr, "cudnn: cudnnSetStream: %s\n", fe::detail::get_error_string(status));
            return cudaErrorUnknown;
        }
        fe::error_t e = st->graph->execute(st->handle, st->pack, st->workspace);
        if (e.is_bad()) {
            fprintf(stderr, "cudnn: execute: %s\n", e.get_message().c_str());
            return cudaErrorUnknown;
        }
    } catch (const std::exception &x) {
        fprintf(stderr, "cudnn: execute: %s\n", x.what());
        return cudaErrorUnknown;
    }
    return cudaSuccess;
}

static void cudnn_teardown(attn_args_t *a)
{
    cudnn_state_free((cudnn_state_t *)a->state);
    a->state = NULL;
}

extern "C" const attn_kernel_t kernel_cudnn = {
    "cudnn",
    CUDNN_PEER_SUMMARY,
    "contiguous and paged caches; fp16, bf16; head_dim a multiple of 8 up to 256 where cuDNN "
    "builds a plan (else unsupported, with its reason); any h/g; no indirection, no forced split, "
    "no 8-bit cache",
    cudnn_unsupported,
    cudnn_layout,
    cudnn_plan,
    cudnn_no_workspace,
    cudnn_private_bytes,
    cudnn_io,
    cudnn_setup,
    cudnn_launch,
    cudnn_teardown,
    CUDNN_PEER_PACKAGE,
    0, /* no --step append */
    ATTN_EXACT,
    NULL, /* selects no keys */
    NULL, /* reads the cache's K/V */
};

#endif /* __CUDA_ARCH__ */
#else

ATTN_PEER_NOT_BUILT(cudnn, "cudnn", CUDNN_PEER_SUMMARY, CUDNN_PEER_PACKAGE)

#endif
