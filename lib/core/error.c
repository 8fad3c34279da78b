/* The one table that maps an ISV_E* code to its name, message, HTTP and gRPC status. */
#include "inferserve.h"

ISV_EXTERN const char *isv_strerror(int err) {
  switch (err) {
  case 0: return "success";
#define XX(name, val, http, grpc, msg) case ISV_##name: return msg;
    ISV_ERRNO_MAP(XX)
#undef XX
  default: return "unknown error";
  }
}

ISV_EXTERN const char *isv_err_name(int err) {
  switch (err) {
  case 0: return "OK";
#define XX(name, val, http, grpc, msg) case ISV_##name: return #name;
    ISV_ERRNO_MAP(XX)
#undef XX
  default: return "UNKNOWN";
  }
}

ISV_EXTERN int isv_err_http_status(int err) {
  switch (err) {
  case 0: return 200;
#define XX(name, val, http, grpc, msg) case ISV_##name: return http;
    ISV_ERRNO_MAP(XX)
#undef XX
  default: return 500;
  }
}

ISV_EXTERN int isv_err_grpc_status(int err) {
  switch (err) {
  case 0: return 0;
#define XX(name, val, http, grpc, msg) case ISV_##name: return grpc;
    ISV_ERRNO_MAP(XX)
#undef XX
  default: return 2; /* UNKNOWN */
  }
}

int isv__err_known(int err) {
  switch (err) {
#define XX(name, val, http, grpc, msg) case ISV_##name:
    ISV_ERRNO_MAP(XX)
#undef XX
    return 1;
  default: return 0;
  }
}
