/* HD marks code shared by kernels and host: compiled for both by nvcc, plain C for gcc. */
#ifndef ATTNBENCH_HD_H
#define ATTNBENCH_HD_H
#ifdef __CUDACC__
#define HD __host__ __device__ __forceinline__
#else
#define HD static inline
#endif
#endif
