/* Frees a list of heap blocks in one statement: TK_FREE_ALL(a->x, a->y, a->z).  Owners of
 * several arrays (result structs, plans) release them with it instead of a line a field.
 * C only (a compound literal holds the list). */
#ifndef TK_FREE_ALL_H
#define TK_FREE_ALL_H

#include <stdlib.h>

static inline void tk_free_all_list(void *const *blocks, size_t count)
{
    for (size_t i = 0; i < count; ++i) free(blocks[i]);
}

#define TK_FREE_ALL(...) \
    tk_free_all_list((void *const[]){__VA_ARGS__}, sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

#endif
