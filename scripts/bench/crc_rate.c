/* The journal's CRC-32 by zlib and by libdeflate on the same random buffers: rate and agreement
   (docs/benchmarks-history.md, "Daemon and transport"). Not part of CI.
   gcc -O2 scripts/bench/crc_rate.c -o crc_rate -lz -ldeflate && ./crc_rate */
#include <zlib.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  for (int sz=64; sz<=16384; sz*=4) {
    unsigned char*b=malloc(sz); for(int i=0;i<sz;i++)b[i]=rand();
    int n=200000000/sz; unsigned long c=0; double t=now();
    for(int i=0;i<n;i++) c+=crc32(i,b,sz);
    double z=now()-t; t=now(); unsigned long d=0;
    for(int i=0;i<n;i++) d+=libdeflate_crc32(i,b,sz);
    double l=now()-t;
    printf("%6d B: zlib %.2f GB/s, libdeflate %.2f GB/s, same=%d\n",sz,n*(double)sz/z/1e9,n*(double)sz/l/1e9,c==d);
  }
}
