"""gRPC server reflection from Node: grpc-js-reflection-client (over @grpc/grpc-js) fetches the
V2 service's descriptor from the demo by symbol, both v1 and v1alpha, builds a client from it
alone and runs ModelInfer on `simple`. The packages are installed with npm into a temporary
directory at test time (nothing is committed); skipped when node or npm is missing or the
registry cannot be reached."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

NPM_PACKAGES = ["@grpc/grpc-js", "@grpc/proto-loader", "grpc-js-reflection-client"]

CLIENT = r"""
const { GrpcReflection } = require('grpc-js-reflection-client');
const grpc = require('@grpc/grpc-js');
const [host, version] = process.argv.slice(2);
(async () => {
  const r = new GrpcReflection(host, grpc.credentials.createInsecure(), {}, version);
  const services = await r.listServices();
  const methods = (await r.listMethods('inference.GRPCInferenceService')).map(m => m.name);
  const d = await r.getDescriptorBySymbol('inference.GRPCInferenceService');
  const pkg = d.getPackageObject({ keepCase: true, longs: String, enums: String });
  const stub = new pkg.inference.GRPCInferenceService(host, grpc.credentials.createInsecure());
  const a = Buffer.alloc(64), b = Buffer.alloc(64);
  for (let i = 0; i < 16; i++) { a.writeInt32LE(i, 4 * i); b.writeInt32LE(3, 4 * i); }
  const inputs = ['INPUT0', 'INPUT1'].map(name => ({ name, datatype: 'INT32', shape: [1, 16] }));
  stub.ModelInfer({ model_name: 'simple', inputs, raw_input_contents: [a, b] }, (err, resp) => {
    if (err) { console.error(String(err)); process.exit(1); }
    const out = {};
    resp.outputs.forEach((o, i) => {
      const raw = resp.raw_output_contents[i];
      out[o.name] = Array.from({ length: raw.length / 4 }, (_, k) => raw.readInt32LE(4 * k));
    });
    console.log(JSON.stringify({ services, methods, model: resp.model_name, out }));
    process.exit(0);
  });
})().catch(e => { console.error(String(e && e.stack || e)); process.exit(1); });
"""


@pytest.fixture(scope="module")
def node_client():
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node or npm is not installed")
    d = tempfile.mkdtemp(prefix="isv-node-reflection-")
    try:
        with open(os.path.join(d, "package.json"), "w") as f:
            f.write('{"private": true}')
        try:
            res = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"]
                                 + NPM_PACKAGES, cwd=d, capture_output=True, text=True,
                                 timeout=120)
        except subprocess.TimeoutExpired:
            pytest.skip("npm install took too long (no registry?)")
        if res.returncode != 0:
            pytest.skip("npm install failed (no registry?): %s" % res.stderr[-500:])
        script = os.path.join(d, "client.js")
        with open(script, "w") as f:
            f.write(CLIENT)
        yield script
    finally:
        shutil.rmtree(d, True)


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_node_reflection_client_infers(demo, node_client, version):
    res = subprocess.run(["node", node_client, "%s:%d" % (demo.host, demo.port), version],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert "inference.GRPCInferenceService" in got["services"], got
    assert "grpc.reflection.%s.ServerReflection" % version in got["services"], got
    assert "ModelInfer" in got["methods"] and "ModelStreamInfer" in got["methods"], got
    assert got["model"] == "simple"
    assert got["out"]["OUTPUT0"] == [i + 3 for i in range(16)]
    assert got["out"]["OUTPUT1"] == [i - 3 for i in range(16)]
