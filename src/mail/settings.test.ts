import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { smtpCheck } from '../cli/mail.ts';
import { loadConfig } from '../config.ts';
import { createServiceStorage, freePort } from '../testing/environment.ts';
import { LIVE_STAND_INS } from '../testing/harness.ts';
import { startSmtpServer } from '../testing/smtp.ts';

const storages: { drop(): Promise<void> }[] = [];
after(() => Promise.all(storages.map((storage) => storage.drop())));

async function configWith(env: Record<string, string>) {
  const storage = await createServiceStorage('sqlite');
  storages.push(storage);
  return loadConfig({ ...storage.settings, ...env });
}

const LIVE = { ...LIVE_STAND_INS, TILL_FACILITATOR_URL: 'http://127.0.0.1:9/facilitator' };

test('TILL_SMTP_URL: smtps is TLS, smtp is STARTTLS required, plain text only beside no live mode; the password is never shown', async () => {
  const from = { TILL_MAIL_FROM: 'Shop <payments@shop.example>' };
  assert.deepEqual((await configWith({ TILL_SMTP_URL: 'smtps://user:p%40ss@mail.example:465', ...from })).mail.smtp, {
    host: 'mail.example',
    port: 465,
    tls: 'implicit',
    user: 'user',
    password: 'p@ss',
  });
  const starttls = await configWith({ TILL_SMTP_URL: 'smtp://user:secret@mail.example', ...LIVE, ...from });
  assert.equal(starttls.mail.smtp?.tls, 'starttls');
  assert.equal(starttls.mail.smtp?.port, 587);
  assert.equal(starttls.mail.smtpShown, 'smtp://mail.example (STARTTLS)');
  assert.equal((await configWith({ TILL_SMTP_URL: 'smtp://127.0.0.1:1025?tls=none', ...from })).mail.smtp?.tls, 'none');
  await assert.rejects(configWith({ TILL_SMTP_URL: 'smtp://user:secret@127.0.0.1:1025?tls=none', ...LIVE, ...from }), (error: Error) => {
    assert.match(error.message, /^Invalid setting TILL_SMTP_URL: .*refused when live mode is served/);
    assert.doesNotMatch(error.message, /secret/);
    return true;
  });
  await assert.rejects(
    configWith({ TILL_SMTP_URL: 'http://mail.example', ...from }),
    /TILL_SMTP_URL: .*must start with smtps:\/\/ \(TLS\) or smtp:\/\/ \(STARTTLS\)/,
  );
  await assert.rejects(configWith({ TILL_SMTP_URL: 'smtps://mail.example' }), /TILL_MAIL_FROM: is required with TILL_SMTP_URL/);
  await assert.rejects(configWith({ TILL_MAIL_FROM: 'Shop <payments@shop.example>\r\nBcc: thief@evil.example' }), /TILL_MAIL_FROM: .* is not an address/);
  assert.equal((await configWith({})).mail.smtp, undefined, 'no SMTP server: mails are kept');
});

test('till doctor talks to the SMTP server up to RCPT, and names what refused', async () => {
  const smtp = await startSmtpServer();
  try {
    const good = await smtpCheck(await configWith({ TILL_SMTP_URL: smtp.url, TILL_MAIL_FROM: 'Shop <payments@shop.example>' }));
    assert.equal(good.status, 'ok', good.detail);
    assert.match(good.detail, /took MAIL FROM and RCPT TO/);
    assert.equal(smtp.received.length, 0, 'nothing was sent');
  } finally {
    await smtp.close();
  }
  const closed = await smtpCheck(await configWith({ TILL_SMTP_URL: `smtp://127.0.0.1:${await freePort()}?tls=none`, TILL_MAIL_FROM: 'payments@shop.example' }));
  assert.equal(closed.status, 'failed');
  assert.equal(closed.setting, 'TILL_SMTP_URL');
  assert.match(closed.detail, /ECONNREFUSED|connect/i);
  assert.equal((await smtpCheck(await configWith({}))).status, 'ok');
});
