// Shared by the tests' SSE client and the realtime benchmarks (which cannot load the test API's imports).
/** An event stream's blocks (the text between blank lines), as they arrive; ends when the stream does. */
export async function* eventStreamBlocks(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      yield buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
    }
  }
}
