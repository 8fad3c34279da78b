#include "inferserve.h"

#define ISV__STR2(x) #x
#define ISV__STR(x) ISV__STR2(x)

ISV_EXTERN const char *isv_version(void) {
  return ISV__STR(ISV_VERSION_MAJOR) "." ISV__STR(ISV_VERSION_MINOR) "." ISV__STR(ISV_VERSION_PATCH);
}

ISV_EXTERN unsigned isv_version_hex(void) { return ISV_VERSION_HEX; }
