"""gRPC server reflection (grpc.reflection.v1 and v1alpha) from a client that knows nothing but
the address: it lists the services, fetches their files through reflection, builds a
ModelInferRequest from those descriptors alone (a descriptor pool and a message factory) and
gets `simple`'s answer. Also: every kind of request and its errors, several requests on one
stream, and a disabled front end that is not shown.

The reflection messages come from the project's own proto/reflection*.proto, compiled at test
time with protoc --python_out (no grpcio-reflection package needed)."""
import atexit
import importlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from isvtest import REPO_ROOT, TIMEOUT

PROTO_DIR = os.path.join(REPO_ROOT, "proto")
VERSIONS = {"v1": "reflection_pb2", "v1alpha": "reflection_v1alpha_pb2"}
_MODS = {}


def reflection_pb(version):
    if not _MODS:
        out = tempfile.mkdtemp(prefix="isv-reflection-")
        atexit.register(shutil.rmtree, out, True)
        subprocess.run(["protoc", "--python_out=" + out, "-I", PROTO_DIR,
                        os.path.join(PROTO_DIR, "reflection.proto"),
                        os.path.join(PROTO_DIR, "reflection_v1alpha.proto")],
                       check=True, capture_output=True, timeout=60)
        sys.path.insert(0, out)
        importlib.invalidate_caches()
        for v, mod in VERSIONS.items():
            _MODS[v] = importlib.import_module(mod)
    return _MODS[version]


class Reflection:
    """One ServerReflectionInfo stream per ask(): requests in, their responses (in order) out."""

    def __init__(self, ch, version):
        self.pb = reflection_pb(version)
        self.method = ch.stream_stream(
            "/grpc.reflection.%s.ServerReflection/ServerReflectionInfo" % version,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.pb.ServerReflectionResponse.FromString)

    def ask(self, *requests):
        return list(self.method(iter(requests), timeout=TIMEOUT))

    def one(self, **kw):
        (resp,) = self.ask(self.pb.ServerReflectionRequest(**kw))
        return resp


def channel_to(demo):
    return grpc.insecure_channel("%s:%d" % (demo.host, demo.port))


def _files(resp):
    assert resp.WhichOneof("message_response") == "file_descriptor_response", resp
    return [descriptor_pb2.FileDescriptorProto.FromString(b)
            for b in resp.file_descriptor_response.file_descriptor_proto]


def _message_class(pool, name):
    desc = pool.FindMessageTypeByName(name)
    get = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    return get(desc) if get else message_factory.MessageFactory(pool).GetPrototype(desc)


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_a_client_that_knows_only_the_address_infers(demo, version):
    ch = channel_to(demo)
    try:
        r = Reflection(ch, version)
        listed = r.one(list_services="")
        names = [s.name for s in listed.list_services_response.service]
        for want in ["inference.GRPCInferenceService", "grpc.health.v1.Health",
                     "grps.protos.v1.GrpsService", "grpc.reflection.v1.ServerReflection",
                     "grpc.reflection.v1alpha.ServerReflection"]:
            assert want in names, names
        assert len(names) == len(set(names)), names
        svc_name = next(n for n in names if n.endswith("InferenceService"))
        # the file that defines the service, and what it imports: into a pool, imports first
        files = _files(r.one(file_containing_symbol=svc_name))
        assert files[0].name == "grpc_predict_v2.proto"
        pool = descriptor_pool.DescriptorPool()
        for fd in reversed(files):
            pool.Add(fd)
        svc = pool.FindServiceByName(svc_name)
        infer = svc.methods_by_name["ModelInfer"]
        Req = _message_class(pool, infer.input_type.full_name)
        Resp = _message_class(pool, infer.output_type.full_name)
        req = Req(model_name="simple")
        a, b = list(range(16)), [3] * 16
        for name, data in (("INPUT0", a), ("INPUT1", b)):
            t = req.inputs.add(name=name, datatype="INT32")
            t.shape.extend([1, 16])
            req.raw_input_contents.append(struct.pack("<16i", *data))
        call = ch.unary_unary("/%s/%s" % (svc.full_name, infer.name),
                              request_serializer=lambda m: m.SerializeToString(),
                              response_deserializer=Resp.FromString)
        resp = call(req, timeout=TIMEOUT)
        assert resp.model_name == "simple"
        out = {o.name: i for i, o in enumerate(resp.outputs)}
        assert list(struct.unpack("<16i", resp.raw_output_contents[out["OUTPUT0"]])) == \
            [x + y for x, y in zip(a, b)]
        assert list(struct.unpack("<16i", resp.raw_output_contents[out["OUTPUT1"]])) == \
            [x - y for x, y in zip(a, b)]
        # the health service's file too, by its name this time
        hf = _files(r.one(file_by_filename="health.proto"))
        assert [f.name for f in hf] == ["health.proto"]
        assert {m.name for m in hf[0].service[0].method} == {"Check", "Watch"}
    finally:
        ch.close()


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_every_request_kind_and_its_errors(demo, version):
    ch = channel_to(demo)
    try:
        r = Reflection(ch, version)
        pb = r.pb
        Q = pb.ServerReflectionRequest
        asks = [
            Q(host="h1", file_containing_symbol="inference.ModelInferRequest.InferInputTensor"),
            Q(file_containing_symbol="inference.GRPCInferenceService.ModelInfer"),  # a method
            Q(file_containing_symbol="grpc.health.v1.HealthCheckResponse.ServingStatus"),
            Q(file_containing_symbol="grps.protos.v1.GenericMapData.SSEntry"),  # a map's entry
            Q(file_containing_symbol="inference.ModelInferRequest.raw_input_contents"),  # field
            Q(file_containing_symbol="grps.protos.v1.DT_FLOAT32"),  # an enum value
            Q(file_containing_symbol="inference.Nope"),
            Q(file_containing_symbol="inference"),  # a package is not a symbol
            Q(file_by_filename="nope.proto"),
            Q(file_containing_extension=pb.ExtensionRequest(
                containing_type="inference.ModelInferRequest", extension_number=100)),
            Q(all_extension_numbers_of_type="inference.ModelInferRequest"),
            Q(all_extension_numbers_of_type="inference.Nope"),
            Q(all_extension_numbers_of_type="grpc.health.v1.HealthCheckResponse.ServingStatus"),
            Q(),  # asks nothing
            Q(list_services="*"),
        ]
        got = r.ask(*asks)  # one stream, answered in order
        assert len(got) == len(asks)
        for q, a in zip(asks, got):
            assert a.original_request == q, (q, a)
        assert got[0].valid_host == "h1"
        assert [f.name for f in _files(got[0])] == ["grpc_predict_v2.proto"]
        assert _files(got[1])[0].name == "grpc_predict_v2.proto"
        assert _files(got[2])[0].name == "health.proto"
        assert _files(got[3])[0].name == "grps.proto"
        assert _files(got[4])[0].name == "grpc_predict_v2.proto"
        assert _files(got[5])[0].name == "grps.proto"
        del got[4:6], asks[4:6]
        for k in (4, 5, 6, 7, 9, 10):  # 10: an enum has no extensions
            e = got[k]
            assert e.WhichOneof("message_response") == "error_response", e
            assert e.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0], e
        assert "inference.Nope" in got[4].error_response.error_message
        assert "nope.proto" in got[6].error_response.error_message
        ext = got[8].all_extension_numbers_response
        assert got[8].WhichOneof("message_response") == "all_extension_numbers_response"
        assert ext.base_type_name == "inference.ModelInferRequest" and list(ext.extension_number) == []
        assert got[11].error_response.error_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert got[12].WhichOneof("message_response") == "list_services_response"
        # an empty stream ends OK; a malformed request ends it INVALID_ARGUMENT
        assert r.ask() == []
        raw = ch.stream_stream("/grpc.reflection.%s.ServerReflection/ServerReflectionInfo"
                               % version, request_serializer=lambda b: b,
                               response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as ei:
            list(raw(iter([b"\x22\x05ab"]), timeout=TIMEOUT))  # a truncated string
        assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT, ei.value
    finally:
        ch.close()


def test_a_disabled_front_end_is_not_shown(start_demo):
    d = start_demo("--disable-protocol", "grps", "--disable-protocol", "grpc_health")
    ch = channel_to(d)
    try:
        r = Reflection(ch, "v1")
        names = [s.name for s in r.one(list_services="").list_services_response.service]
        assert "inference.GRPCInferenceService" in names
        assert "grps.protos.v1.GrpsService" not in names
        assert "grpc.health.v1.Health" not in names
        for q in ({"file_by_filename": "grps.proto"},
                  {"file_containing_symbol": "grps.protos.v1.GrpsService"},
                  {"file_containing_symbol": "grps.protos.v1.GrpsMessage"},
                  {"file_containing_symbol": "grpc.health.v1.Health.Watch"}):
            e = r.one(**q)
            assert e.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0], (q, e)
    finally:
        ch.close()


def test_reflection_can_be_disabled(start_demo):
    d = start_demo("--disable-protocol", "grpc_reflection")
    ch = channel_to(d)
    try:
        with pytest.raises(grpc.RpcError) as ei:
            Reflection(ch, "v1").one(list_services="")
        assert ei.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        ch.close()
