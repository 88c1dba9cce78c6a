import sys
p='kernels/bifurcated.cu'
s=open(p).read()
rep=[("""    plan->ctx_sms = wgmma && ck > 0 ?""","""    if (getenv("PROBE_CTX_SPLITS") && ck > 0) plan->split = split_plan_fixed(ck, atoi(getenv("PROBE_CTX_SPLITS")), wide ? WG_KT_WIDE : ATTN_KEY_TILE);
    plan->ctx_sms = wgmma && ck > 0 ?"""),("""    plan->ctx_sms = wgmma && ck > 0 ? bif_ctx_sms(p, dev, ctx_items * plan->split.splits, wide) : 0;
}""","""    plan->ctx_sms = wgmma && ck > 0 ? bif_ctx_sms(p, dev, ctx_items * plan->split.splits, wide) : 0;
    if (getenv("PROBE_CTX_SMS") && wgmma && ck > 0 && problem_group(p) == 1 && p->cache == CACHE_CONTIGUOUS) plan->ctx_sms = atoi(getenv("PROBE_CTX_SMS"));
}"""),("""    if (ctas > st->sms) ctas = st->sms;
""","""    if (ctas > st->sms) ctas = st->sms;
    if (getenv("PROBE_DEC_CTAS") && ctas > atoi(getenv("PROBE_DEC_CTAS"))) ctas = atoi(getenv("PROBE_DEC_CTAS"));
"""),("""    if (s.ctx_slots > 0) {
        attn_params_t cp = P;""","""    const int probe_part = getenv("PROBE_PART") ? atoi(getenv("PROBE_PART")) : 0;
    if (s.ctx_slots > 0 && probe_part != 2) {
        attn_params_t cp = P;"""),("""    if (split) {
        /* the decode part's CTAs take the SMs the persistent context grid leaves */""","""    if (probe_part == 1) {
        err = cudaSuccess;
    } else if (split) {
        /* the decode part's CTAs take the SMs the persistent context grid leaves */""")]
for a,b in rep:
    if a in s: s=s.replace(a,b)
    else: print("skip hook:", a[:60])
open(p,'w').write(s)
