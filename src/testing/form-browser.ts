// Pages driven over HTTP in the test's own process, as a browser would: cookies kept, forms posted.
import type { TestService } from './harness.ts';

/** A browser over app.inject: keeps the cookies the service sets and sends them back, and posts forms. */
export class FormBrowser {
  cookies = new Map<string, string>();
  private service: TestService;
  private ip: string;
  constructor(service: TestService, ip = '198.51.100.7') {
    this.service = service;
    this.ip = ip;
  }
  async request(method: 'GET' | 'POST', url: string, form?: Record<string, string>) {
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
  /** The sign-in form's hidden CSRF field. */
  async csrf(url = '/sign-in'): Promise<string> {
    const page = await this.request('GET', url);
    return /name="csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  }
  async signIn(email: string, password: string, extra: Record<string, string> = {}) {
    return this.request('POST', '/sign-in', { csrf: await this.csrf(), email, password, ...extra });
  }
}
