// A browser over app.inject, for the service's pages: keeps the cookies the service sets and sends them back.
import { createUser } from '../accounts/users.ts';
import type { TestService } from './harness.ts';

/** A form body: fields by name, or pairs when a name repeats (ticked checkboxes). */
export type Form = Record<string, string> | [string, string][];

export class Browser {
  cookies = new Map<string, string>();
  private service: TestService;
  private ip: string;
  constructor(service: TestService, ip = '198.51.100.7') {
    this.service = service;
    this.ip = ip;
  }
  async request(method: 'GET' | 'POST', url: string, form?: Form) {
    const response = await this.service.app.inject({
      method,
      url,
      remoteAddress: this.ip,
      headers: {
        cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { payload: new URLSearchParams(form).toString() } : {}),
    });
    const setCookies = response.headers['set-cookie'];
    for (const line of setCookies === undefined ? [] : Array.isArray(setCookies) ? setCookies : [setCookies]) {
      const [pair = ''] = line.split(';');
      const [name = '', value = ''] = pair.split('=');
      if (/Max-Age=0/.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }
  /** The hidden CSRF field of the form on the page at `url`. */
  async csrf(url = '/sign-in'): Promise<string> {
    const page = await this.request('GET', url);
    return csrfField(page.body);
  }
  async signIn(email: string, password: string, extra: Record<string, string> = {}) {
    return this.request('POST', '/sign-in', { csrf: await this.csrf(), email, password, ...extra });
  }
  /** The buyer's "Email me the receipt" form as a browser sends it: its page first, for the form's token. */
  async askForReceipt(order: string, email: string) {
    const csrf = await this.csrf(`/mail/receipt?order=${encodeURIComponent(order)}`);
    return this.request('POST', '/mail/receipt', { csrf, order, email });
  }
}

/** A page's hidden CSRF field, or '' when it has none. */
export const csrfField = (html: string): string => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

let signedInUsers = 0;

/** A new merchant with a user signed in in a browser of its own. */
export async function signedInMerchant(service: TestService, options: { walletAddress?: string } = {}) {
  const { merchantId } = await service.merchant(options);
  const email = `owner${++signedInUsers}-${Date.now()}@shop.example`;
  const password = 'correct horse battery staple';
  const user = await createUser(service.context.db, { merchantId, email, password });
  const browser = new Browser(service);
  const answer = await browser.signIn(email, password);
  if (answer.statusCode !== 303) throw new Error(`sign-in answered ${answer.statusCode}`);
  return { merchantId, userId: user.id, email, password, browser };
}

/** A form post as another site's page would send it: the browser's cookies, and that site's Origin. */
export function postFromOrigin(service: TestService, browser: Browser, url: string, form: Record<string, string>, origin = 'https://evil.example') {
  return service.app.inject({
    method: 'POST',
    url,
    headers: {
      cookie: [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
      origin,
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: new URLSearchParams(form).toString(),
  });
}
