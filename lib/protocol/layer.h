/* Every header of lib/protocol/ includes this first. lib/meson.build compiles each layer as a
 * library of its own with ISV__LAYER_<NAME> defined, so an include that goes up the layers
 * fails to compile: codec, core and transport may not include protocol/ headers (see
 * docs/ARCHITECTURE.md). */
#ifndef ISV_PROTOCOL_LAYER_H
#define ISV_PROTOCOL_LAYER_H
#if defined(ISV__LAYER_CODEC) || defined(ISV__LAYER_CORE) || \
    defined(ISV__LAYER_TRANSPORT)
#error "protocol/ is above this layer: codec, core and transport may not include its headers"
#endif
#endif
