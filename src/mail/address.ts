/** What an address field takes: one address, no display name, no line break; at most 254 characters (RFC 5321). */
const ADDRESS = /^[^\s@<>()",;:\\[\]]+@[^\s@<>()",;:\\[\]]+\.[^\s@<>()",;:\\[\]]+$/;

/** The longest address (RFC 5321). */
export const MAX_ADDRESS = 254;

/** Why `email` is not an address mail can go to, or undefined when it is one. */
export function mailAddressProblem(email: string): string | undefined {
  if (email.length > MAX_ADDRESS || !ADDRESS.test(email)) return 'is not an email address (write it as name@example.com)';
  return undefined;
}

export const normalizeAddress = (email: string) => email.trim().toLowerCase();
