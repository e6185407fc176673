/**
 * Prometheus text as a map: each sample as the node writes it (name, and its labels in braces,
 * e.g. `belfry_events{state="succeeded"}`) to its value.
 */
export function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    // The value is the last field: a label value may hold spaces.
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** The samples of one scrape of the node at `baseUrl` (its /metrics). */
export async function scrapeMetrics(baseUrl: string): Promise<Map<string, number>> {
  return parseMetrics(await (await fetch(`${baseUrl}/metrics`)).text());
}
