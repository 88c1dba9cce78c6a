#include "memplan.h"
#include "layouts.h"
#include "../problem/kv_quant.h"

static size_t rounded(size_t bytes)
{
    return bytes ? (bytes + MEM_ALIGN - 1) / MEM_ALIGN * MEM_ALIGN : 0;
}

void mem_plan_make(const problem_t *p, const attn_kernel_t *kernel, const attn_plan_t *plan,
                   mem_plan_t *m)
{
    size_t es = dtype_size(p->dtype), kv_es = dtype_size(problem_kv_dtype(p));
    size_t streams = (size_t)problem_streams(p);
    kv_layout_t layout = kernel->layout(p);

    *m = (mem_plan_t){0};
    m->geom = kv_geometry_make(p, layout);
    m->q = rounded(streams * p->heads * p->head_dim * es);
    m->out = m->q;
    for (int part = 0; part < 2; ++part) {
        m->kv_elements[part] = layout_elements(&m->geom, p, part);
        m->kv[part] = rounded((size_t)m->kv_elements[part] * kv_es);
    }
    if (p->kv_quant != KV_QUANT_NONE)
        m->kv_scale = rounded(2 * (size_t)kv_scale_entries(&m->geom) * sizeof(float));
    if (p->step == STEP_APPEND) {
        m->qkv = rounded(streams * (size_t)(p->heads + 2 * p->kv_heads) * p->head_dim * es);
        m->rope_cs = rounded((size_t)p->head_dim * sizeof(float));
    }
    if (layout == LAYOUT_PAGED) {
        m->num_blocks = paged_block_count(p);
        m->block_table = rounded(streams * m->geom.max_blocks_per_seq * sizeof(int32_t));
        /* owner and first position of every block: read by the device fill only */
        m->block_owner = 2 * rounded((size_t)m->num_blocks * sizeof(int32_t));
    }
    if (p->indirection)
        m->indirection = rounded(streams * (size_t)problem_keys(p) * sizeof(int32_t));
    if (problem_ragged(p)) m->ctx_lens = rounded((size_t)p->batch * sizeof(int32_t));
    m->workspace = rounded(kernel->workspace_bytes(p, plan));
    m->private_bytes = kernel->private_bytes ? rounded(kernel->private_bytes(p, plan)) : 0;
    m->total = m->q + m->out + m->kv[0] + m->kv[1] + m->block_table + m->block_owner +
               m->indirection + m->workspace + m->private_bytes + m->kv_scale + m->qkv +
               m->rope_cs + m->ctx_lens;
}

int mem_plan_fits(const mem_plan_t *m, size_t free_bytes)
{
    return free_bytes > MEM_HEADROOM && m->total <= free_bytes - MEM_HEADROOM;
}
