/* XQA for bf16 inputs and cache, 8 query head(s) per kv head (xqa_instance.cuh). */
#define XQA_TYPE bf16
#define INPUT_FP16 0
#define HEAD_GRP_SIZE 8
#include "xqa_instance.cuh"
