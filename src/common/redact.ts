/**
 * A URL as logs and `till doctor` may show it: scheme and host only, `/…` standing for a path or a
 * query (where providers put their keys, as in `https://base-mainnet.g.alchemy.com/v2/KEY`), and
 * never a user or password. Text that is not a URL is shown as `(a URL that cannot be parsed)`.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '(a URL that cannot be parsed)';
  }
  const hidden = parsed.pathname.replace(/\/+$/, '') !== '' || parsed.search !== '' || parsed.hash !== '';
  return `${parsed.protocol}//${parsed.host}${hidden ? '/…' : ''}`;
}

/** `text` with every http(s) URL in it redacted as `redactUrl` does. */
export function redactUrls(text: string): string {
  return text.replace(/https?:\/\/[^\s"'<>`]+/gi, (match) => {
    // Punctuation after a URL in a sentence is the sentence's.
    const [, url, trailing] = /^(.*?)([.,;:)\]]*)$/s.exec(match)!;
    return `${redactUrl(url!)}${trailing}`;
  });
}
