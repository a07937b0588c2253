/* The microbenchmark behind shifted lanes (docs/performance.md, "Shifted lanes"): one thread,
   a 5-point f32 star on a W x H grid that stays in cache, swept back and forth `reps` times.
   plain:  the loop as the compiler vectorizes it (one unaligned load per read);
   shuf8:  256-bit vectors, aligned loads, x-1 and x+1 shuffled out of neighbouring vectors;
   shuf16: the same with 512-bit vectors (what the CPU backend generates).
   Build and run:
     gcc -O3 -march=native -mprefer-vector-width=512 -DW=512 -DH=32 -o star_shift scripts/star_shift.c
     ./star_shift 2400 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#ifndef W
#define W 1024
#endif
#ifndef H
#define H 128
#endif
typedef float v8 __attribute__((vector_size(32)));
typedef int i8 __attribute__((vector_size(32)));
typedef float v16 __attribute__((vector_size(64)));
typedef int i16 __attribute__((vector_size(64)));
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
__attribute__((noinline)) void plain(const float*restrict a, float*restrict b){
  for(int y=1;y<H-1;y++){const float*r=a+(size_t)y*W; float*o=b+(size_t)y*W;
    for(int x=1;x<W-1;x++) o[x]=(5.1f*r[x-W]+12.1f*r[x-1]+15.0f*r[x]+12.2f*r[x+1]+5.2f*r[x+W])*(1.0f/49.6f);}
}
#define SHUF(VT,IT,N) \
__attribute__((noinline)) void shuf##N(const float*restrict a, float*restrict b){ \
  const IT lm = LM##N, rm = RM##N; \
  for(int y=1;y<H-1;y++){const float*r=a+(size_t)y*W; float*o=b+(size_t)y*W; \
    VT prev=*(const VT*)(r), cur=*(const VT*)(r+N); \
    for(int x=N;x<W-N;x+=N){ VT next=*(const VT*)(r+x+N); \
      VT l=__builtin_shuffle(prev,cur,lm), rr=__builtin_shuffle(cur,next,rm); \
      VT n=*(const VT*)(r+x-W), s=*(const VT*)(r+x+W); \
      *(VT*)(o+x)=(5.1f*n+12.1f*l+15.0f*cur+12.2f*rr+5.2f*s)*(1.0f/49.6f); \
      prev=cur; cur=next;} } }
#define LM8 (i8){7,8,9,10,11,12,13,14}
#define RM8 (i8){1,2,3,4,5,6,7,8}
#define LM16 (i16){15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30}
#define RM16 (i16){1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}
SHUF(v8,i8,8)
SHUF(v16,i16,16)
int main(int argc,char**argv){
  float*a=aligned_alloc(64,sizeof(float)*W*H),*b=aligned_alloc(64,sizeof(float)*W*H);
  for(int i=0;i<W*H;i++){a[i]=rand()/(float)RAND_MAX;b[i]=a[i];}
  int reps=atoi(argv[1]);
  void(*fs[3])(const float*,float*)={plain,shuf8,shuf16}; const char*nm[3]={"plain","shuf8","shuf16"};
  for(int round=0;round<3;round++) for(int k=0;k<3;k++){
    double t0=now(); for(int r=0;r<reps;r++){fs[k](a,b);fs[k](b,a);} double t=now()-t0;
    printf("%s %.2f GCells/s  %.2f cyc/vec8 @3.1GHz\n",nm[k],2.0*reps*(W-2)*(H-2)/t*1e-9, 3.1e9*t/(2.0*reps*(W-2)*(H-2)/8));
  }
}
