import re
p='kernels/attn_wgmma.cuh'
s=open(p).read()
a_start=s.index("        wg_fence();\n#pragma unroll\n        for (int mb = 0; mb < 2; ++mb)\n#pragma unroll\n            for (int kk = 0; kk < WG_D / 16; ++kk)")
a_end=s.index("        wg_hold(st[1]);\n",a_start)+len("        wg_hold(st[1]);\n")
s=s[:a_start]+"#if ATTN_DEC_PROBE == 1\n        for (int x = 0; x < 8; ++x) st[x >> 2][x & 3] = 0.01f * x;\n#else\n"+s[a_start:a_end]+"#endif\n"+s[a_end:]
b_start=s.index("        wg_fence();\n#pragma unroll\n        for (int mb = 0; mb < 2; ++mb)\n#pragma unroll\n            for (int ks = 0; ks < KT / 16; ++ks)")
b_end=s.index("        wg_hold(ot[1]);\n",b_start)+len("        wg_hold(ot[1]);\n")
s=s[:b_start]+"#if ATTN_DEC_PROBE == 1\n        for (int x = 0; x < 8; ++x) ot[x >> 2][x & 3] = 0.01f * x;\n#else\n"+s[b_start:b_end]+"#endif\n"+s[b_end:]
c="""                const dec_source src = *next;
                mbar_expect_tx(bar, S::TILE);"""
assert c in s
s=s.replace(c,"""#if ATTN_DEC_PROBE == 2
                if (1) { mbar_arrive(bar); return; }
#endif
"""+c)
open(p,'w').write(s)
