/**
 * A response body read up to `limit` bytes: the bytes, or undefined (and the
 * rest cancelled) when it is longer, so a hostile or broken server cannot make
 * a function buffer hundreds of megabytes before its timeout.
 */
export async function readLimited(
  response: Response,
  limit: number,
): Promise<Uint8Array | undefined> {
  const reader = response.body?.getReader();
  if (!reader) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
