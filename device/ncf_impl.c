/* ncf.h's implementation for the device, alone in its object so its code size shows, with
   the allocator hooks that count its heap. */
#include <stddef.h>
void *dev_malloc(size_t n);
void *dev_realloc(void *p, size_t n);
void dev_free(void *p);
#define NCF_MALLOC(n) dev_malloc(n)
#define NCF_REALLOC(p, n) dev_realloc(p, n)
#define NCF_FREE(p) dev_free(p)
#define NCF_IMPLEMENTATION
#include "ncf.h"
