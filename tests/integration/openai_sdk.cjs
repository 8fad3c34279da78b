// OpenAI's official Node SDK against the demo (test_openai_sdk.py runs it):
//   node openai_sdk.cjs BASE_URL API_KEY SCENARIO
// prints one JSON object: what the SDK returned or threw. The `openai` package is found
// through NODE_PATH (installed by the test outside the repository).
'use strict';
const OpenAI = require('openai');

const [baseURL, apiKey, scenario] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 20000 });
const user = (content) => [{ role: 'user', content }];

// An SDK error as data: its class, status and OpenAI's error fields.
function failure(e) {
  return { thrown: e.constructor.name, status: e.status, code: e.code ?? null,
           type: e.type ?? null, param: e.param ?? null, message: e.message };
}

const scenarios = {
  async models() {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    const one = await client.models.retrieve('tiny_lm');
    return { ids, one };
  },
  async chat() {
    return client.chat.completions.create({ model: 'tiny_lm', messages: user('tell me about the server'),
                                            max_tokens: 6, seed: 7, temperature: 0.8 });
  },
  async chat_stream() {
    const stream = await client.chat.completions.create({
      model: 'tiny_lm', messages: user('tell me about the server'), max_tokens: 6, seed: 7,
      temperature: 0.8, stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    return { chunks, ended: true };
  },
  async completion() {
    return client.completions.create({ model: 'tiny_lm', prompt: 'the client', max_tokens: 4,
                                       temperature: 0 });
  },
  async completion_stream() {
    const stream = await client.completions.create({ model: 'tiny_lm', prompt: 'the client',
                                                     max_tokens: 4, temperature: 0, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    return { chunks, ended: true };
  },
  async embeddings() {
    const input = ['hello world', 'hello world!', 'a different sentence'];
    const floats = await client.embeddings.create({ model: 'tiny_embed', input,
                                                    encoding_format: 'float' });
    // the SDK's default: it asks for base64 and decodes it to floats itself
    const decoded = await client.embeddings.create({ model: 'tiny_embed', input });
    const raw = await client.embeddings.create({ model: 'tiny_embed', input,
                                                 encoding_format: 'base64' });
    return { floats, decoded, raw };
  },
  async errors() {
    const out = {};
    try { await client.chat.completions.create({ model: 'nope', messages: user('x') }); }
    catch (e) { out.unknown_model = failure(e); }
    try { await client.chat.completions.create({ model: 'tiny_lm', messages: user('x'), n: 2 }); }
    catch (e) { out.n2 = failure(e); }
    try {
      const s = await client.chat.completions.create({ model: 'nope', messages: user('x'),
                                                       stream: true });
      for await (const c of s) void c;
    } catch (e) { out.stream_unknown_model = failure(e); }
    const seen = [];
    try { // the zoo's tokens model fails at the word FAIL, after two responses
      const s = await client.completions.create({ model: 'tokens', prompt: 'one two FAIL three',
                                                  stream: true });
      for await (const c of s) seen.push(c.choices[0].text);
    } catch (e) { out.mid_stream = failure(e); out.mid_stream.seen = seen; }
    return out;
  },
  // Read two chunks of a slow stream, then leave: breaking out of the loop aborts the request.
  async abort() {
    const stream = await client.chat.completions.create({
      model: 'tiny_lm', messages: user('the server'), max_tokens: 200, stream: true });
    const chunks = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunks.length === 3) break; // the role chunk and two words
    }
    return { chunks: chunks.length };
  },
};

scenarios[scenario]()
  .then((r) => { process.stdout.write(JSON.stringify({ ok: r })); })
  .catch((e) => { process.stdout.write(JSON.stringify({ error: failure(e) })); });
