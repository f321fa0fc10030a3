/* TensorKernels: the precision and backend choices every core shares. */
#ifndef TK_TYPES_H
#define TK_TYPES_H

typedef enum { TK_PRECISION_SINGLE = 0, TK_PRECISION_DOUBLE = 1 } tk_precision;
typedef enum { TK_BACKEND_CPU = 0, TK_BACKEND_OMP = 1, TK_BACKEND_CUDA = 2 } tk_backend;

#endif
