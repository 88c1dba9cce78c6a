/* XQA for fp16 inputs and an e4m3 cache, 4 query head(s) per kv head (xqa_instance.cuh). */
#define XQA_TYPE fp16
#define INPUT_FP16 1
#define XQA_CACHE_E4M3 1
#define HEAD_GRP_SIZE 4
#include "xqa_instance.cuh"
