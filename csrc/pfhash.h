/* Small hashing and arithmetic helpers shared by kernels. */
#ifndef PF_HASH_H
#define PF_HASH_H
#include <stdint.h>

/* Thomas Wang's 64-bit mix as Paimon's FastHash applies it: Java long
 * arithmetic, `>>` is an arithmetic (sign-propagating) shift. */
static inline int64_t pf_wang64(int64_t key) {
    uint64_t k = (uint64_t)key;
    k = (~k) + (k << 21);
    k = k ^ (uint64_t)((int64_t)k >> 24);
    k = (k + (k << 3)) + (k << 8);
    k = k ^ (uint64_t)((int64_t)k >> 14);
    k = (k + (k << 2)) + (k << 4);
    k = k ^ (uint64_t)((int64_t)k >> 28);
    k = k + (k << 31);
    return (int64_t)k;
}

/* Lemire's fastmod: a % d for 32-bit a and d without a division. */
static inline uint64_t pf_fastmod_m(uint32_t d) { return UINT64_C(0xFFFFFFFFFFFFFFFF) / d + 1; }
static inline uint32_t pf_fastmod(uint32_t a, uint64_t M, uint32_t d) {
    uint64_t lowbits = M * a;
    return (uint32_t)(((__uint128_t)lowbits * d) >> 64);
}
#endif
