// Every read and write goes through the job endpoints (POST /<job>), as any other client's would.
// Requests carry the session's CSRF token; the session itself is an HttpOnly cookie.

const csrf = document.querySelector('meta[name="reme-csrf"]')?.content || "";

function headers() {
  return { "content-type": "application/json", "x-reme-csrf": csrf };
}

export async function job(name, params = {}) {
  let response;
  try {
    response = await fetch("/" + encodeURIComponent(name), {
      method: "POST",
      headers: headers(),
      body: JSON.stringify(params),
      credentials: "same-origin",
    });
  } catch (error) {
    return { success: false, answer: `the service did not answer (${error})`, metadata: {} };
  }
  if (response.status === 401) location.reload();
  try {
    return await response.json();
  } catch {
    return { success: false, answer: `HTTP ${response.status}`, metadata: {} };
  }
}

// A stream job's chunks (SSE over a POST), handed to `onChunk` one by one; ends at the done chunk.
export async function stream(name, params, onChunk) {
  const response = await fetch("/" + encodeURIComponent(name), {
    method: "POST",
    headers: headers(),
    body: JSON.stringify(params),
    credentials: "same-origin",
  });
  if (!response.ok || !response.body) {
    onChunk({ type: "error", message: `HTTP ${response.status}` });
    onChunk({ type: "done", success: false });
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of block.split("\n")) {
        if (line.startsWith("data: ")) {
          try {
            onChunk(JSON.parse(line.slice(6)));
          } catch {
            /* a malformed chunk is skipped */
          }
        }
      }
    }
  }
}
