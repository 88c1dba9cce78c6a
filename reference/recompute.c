/* The reference of the recomputed K/V (recompute.h). */
#include "recompute.h"

#include <math.h>
#include <stdlib.h>
#include "../problem/recompute.h"

void reference_recompute_w(uint64_t seed, int kv_heads, int hidden, int d, float *w)
{
    const long blocks = 2L * kv_heads;
#pragma omp parallel for schedule(static)
    for (long wh = 0; wh < blocks; ++wh)
        for (int e = 0; e < hidden; ++e)
            for (int x = 0; x < d; ++x)
                w[(wh * hidden + e) * d + x] =
                    recompute_w(seed, kv_heads, hidden, d, (int)(wh / kv_heads), (int)(wh % kv_heads), e, x);
}

void reference_recomputed_kv(const float *w, uint64_t seed, int kv_heads, int hidden, int d, uint64_t token,
                             int which, int head, double *want, double *scale)
{
    const float *block = w + ((size_t)which * kv_heads + head) * hidden * d;
    for (int x = 0; x < d; ++x) want[x] = scale[x] = 0.0;
    for (int e = 0; e < hidden; ++e) {
        const double xe = recompute_x(seed, hidden, token, e);
        const float *row = block + (size_t)e * d;
        for (int x = 0; x < d; ++x) {
            want[x] += xe * row[x];
            scale[x] += fabs(xe * row[x]);
        }
    }
}
