/* XQA for fp16 inputs and cache, 2 query head(s) per kv head (xqa_instance.cuh). */
#define XQA_TYPE fp16
#define INPUT_FP16 1
#define HEAD_GRP_SIZE 2
#include "xqa_instance.cuh"
