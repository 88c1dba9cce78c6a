p='kernels/attn_wgmma.cuh'
s=open(p).read()
a=s.index("    auto dec_tile = [&](int i, int ls) {")
b=s.index("    };\n", a)
seg=s[a:b]
lines=seg.split('\n')
out=[]
cnt={'wait0':0,'bar':0}
for L in lines:
    st=L.strip()
    if st=="auto dec_tile = [&](int i, int ls) {":
        out.append(L); out.append("        long long _p0 = clock64();"); continue
    if st=="if (w == wg) {":
        out.append("        long long _p1 = clock64(); pt_ph[0] += _p1 - _p0;")
        out.append(L); continue
    if st.startswith("const int nvalid = min(KT"):
        out.append("            { long long _q = clock64(); pt_ph[1] += _q - _p1; _p1 = _q; }"); out.append(L); cnt['wait0']+=1; continue
    if st.startswith("const int stream = dec_stream(c, row)"):
        out.append("            { long long _q = clock64(); pt_ph[4] += _q - _p1; _p1 = _q; }"); out.append(L); cnt['wait0']+=1; continue
    if st.startswith("wg_bar();"):
        out.append(L); cnt['bar']+=1
        out.append("            { long long _q = clock64(); pt_ph[%d] += _q - _p1; _p1 = _q; }" % (2 if cnt['bar']==1 else 3)); continue
    if st=="release(ls);":
        out.append("        if (w == wg) { long long _q = clock64(); pt_ph[5] += _q - _p1; pt_ph[6]++; } else { pt_ph[7] += clock64() - _p0; pt_ph[8]++; }")
        out.append(L); continue
    out.append(L)
assert cnt=={'wait0':2,'bar':2}, cnt
s=s[:a]+'\n'.join(out)+s[b:]
s=s.replace("""    const T *kv = static_cast<const T *>(P.kv);
""","""    const T *kv = static_cast<const T *>(P.kv);
    long long pt_ph[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    long long pt_t0 = clock64(), pt_ctx = 0, pt_nctx = 0;
""",1)
old="""            if (wg_has_rows) {
                compute(t, cur, lk >= 0 ? slot_at(tile_base + lk) : 0u, slot_at(tile_base + lv),"""
new="""            long long _c0 = clock64();
            if (wg_has_rows) {
                compute(t, cur, lk >= 0 ? slot_at(tile_base + lk) : 0u, slot_at(tile_base + lv),"""
assert s.count(old)==1; s=s.replace(old,new)
old="""            release(lv);
"""
new="""            pt_ctx += clock64() - _c0; ++pt_nctx;
            release(lv);
"""
assert s.count(old)>=1; s=s.replace(old,new,1)
old="""    return TMA ? nring : ntiles;
    };"""
new="""    if (DEC && (tid & 127) == 0)
        printf("PH %d %d %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld\\n", blockIdx.x, wg, clock64() - pt_t0, pt_ctx, pt_nctx,
               pt_ph[0], pt_ph[1], pt_ph[2], pt_ph[3], pt_ph[4], pt_ph[5], pt_ph[6], pt_ph[7], pt_ph[8]);
    return TMA ? nring : ntiles;
    };"""
assert s.count(old)==1; s=s.replace(old,new)
open(p,'w').write(s)
