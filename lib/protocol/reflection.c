/* gRPC reflection's view of the descriptors (reflection.h). */
#include "protocol/reflection.h"

#include <stdlib.h>
#include <string.h>

uint64_t isv__reflection_visible(const isv__grpc_services *s) {
  uint64_t shown = 0;
  for (size_t i = 0; i < isv__pb_n_symbols; i++) {
    const isv__pb_symbol *y = &isv__pb_symbols[i];
    if (y->kind == ISV__PB_SERVICE && y->file < 64 && isv__grpc_services_has(s, y->name))
      shown |= (uint64_t)1 << y->file;
  }
  uint64_t with_deps = shown; /* deps are transitive already: one pass */
  for (size_t f = 0; f < isv__pb_n_files && f < 64; f++) {
    if (!(shown >> f & 1)) continue;
    for (size_t k = 0; k < isv__pb_files[f].n_deps; k++)
      if (isv__pb_files[f].deps[k] < 64) with_deps |= (uint64_t)1 << isv__pb_files[f].deps[k];
  }
  return with_deps;
}

int isv__reflection_file(uint64_t visible, const char *name) {
  for (size_t f = 0; f < isv__pb_n_files && f < 64; f++)
    if ((visible >> f & 1) && strcmp(isv__pb_files[f].name, name) == 0) return (int)f;
  return -1;
}

static int by_name(const void *key, const void *elem) {
  return strcmp(key, ((const isv__pb_symbol *)elem)->name);
}

int isv__reflection_symbol(const isv__grpc_services *s, uint64_t visible, const char *symbol,
                           isv__pb_kind *kind) {
  const isv__pb_symbol *y =
      bsearch(symbol, isv__pb_symbols, isv__pb_n_symbols, sizeof *y, by_name);
  if (y == NULL || y->file >= 64 || !(visible >> y->file & 1)) return -1;
  if (y->kind == ISV__PB_SERVICE && !isv__grpc_services_has(s, y->name)) return -1;
  if (y->kind == ISV__PB_METHOD) { /* "pkg.Service.Method": its service must be served */
    char service[512];
    const char *dot = strrchr(y->name, '.');
    size_t n = (size_t)(dot - y->name);
    if (n >= sizeof service) return -1;
    memcpy(service, y->name, n);
    service[n] = '\0';
    if (!isv__grpc_services_has(s, service)) return -1;
  }
  if (kind) *kind = y->kind;
  return y->file;
}
