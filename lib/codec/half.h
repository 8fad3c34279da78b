/* IEEE binary16 (FP16) and bfloat16 (BF16) conversions, round to nearest even. */
#ifndef ISV_CODEC_HALF_H
#define ISV_CODEC_HALF_H

#include <stdint.h>

uint16_t isv__f32_to_f16(float v);
uint16_t isv__f64_to_f16(double v);
float isv__f16_to_f32(uint16_t h);
uint16_t isv__f32_to_bf16(float v);
uint16_t isv__f64_to_bf16(double v);
float isv__bf16_to_f32(uint16_t h);

#endif
