/* Every header of lib/transport/ includes this first. lib/meson.build compiles each layer as a
 * library of its own with ISV__LAYER_<NAME> defined, so an include that goes up the layers
 * fails to compile: codec and core may not include transport/ headers (docs/ARCHITECTURE.md). */
#ifndef ISV_TRANSPORT_LAYER_H
#define ISV_TRANSPORT_LAYER_H
#if defined(ISV__LAYER_CODEC) || defined(ISV__LAYER_CORE)
#error "transport/ is above this layer: codec and core may not include its headers"
#endif
#endif
