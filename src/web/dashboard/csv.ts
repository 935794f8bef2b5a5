/**
 * One CSV line (RFC 4180, CRLF): a cell with a comma, quote or line break is quoted, its quotes
 * doubled. A cell a spreadsheet would take for a formula (starting with = + - @, tab or carriage
 * return) is prefixed with a single quote first, so opening the file runs nothing.
 */
export function toCsvLine(cells: readonly string[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
