// The dashboard's frame: behind sign-in, one navigation, form posts refused without their CSRF token
// or from another origin.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeOnEngine, engines, startTestService, type TestService } from '../../testing/harness.ts';
import { Browser, signedInMerchant } from '../../testing/page-browser.ts';
import { SECTIONS } from './layout.ts';

for (const { engine, skip } of engines) {
  describeOnEngine(`the dashboard on ${engine}`, skip, () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(engine);
    });
    after(() => service?.stop());

    test('signed out, the dashboard sends the browser to sign in and back', async () => {
      const answer = await new Browser(service).request('GET', '/dashboard');
      assert.equal(answer.statusCode, 303);
      assert.equal(answer.headers.location, '/sign-in?return_to=%2Fdashboard');
    });

    test('signed in, the overview shows the navigation with the current section marked', async () => {
      const { browser, email } = await signedInMerchant(service);
      const answer = await browser.request('GET', '/dashboard');
      assert.equal(answer.statusCode, 200);
      for (const section of SECTIONS) assert.ok(answer.body.includes(`href="${section.path}"`), section.path);
      assert.match(answer.body, /<a href="\/dashboard" aria-current="page">Overview<\/a>/);
      assert.ok(answer.body.includes(email));
      assert.match(answer.body, /<strong>Test mode<\/strong> — you are viewing test data; payments use fake money\./);
    });
  });
}
