import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { type PayingService, startPayingService } from '../testing/harness.ts';

describe('the sandbox seen through the service', () => {
  let paying: PayingService;
  before(async () => {
    paying = await startPayingService('sqlite');
  });
  after(() => paying?.stop());

  const faucet = (body: string, contentType: string) =>
    paying.service.app.inject({ method: 'POST', url: '/sandbox/faucet', headers: { 'content-type': contentType }, payload: body });

  test('the faucet takes JSON with a charset parameter and refuses other media types', async () => {
    const body = JSON.stringify({ address: privateKeyToAddress(generatePrivateKey()), usdc: '2' });
    for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8']) {
      const response = await faucet(body, type);
      assert.equal(response.statusCode, 200, `${type}: ${response.body}`);
      assert.equal(response.json().usdc, '2');
    }
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=iso-8859-1']) {
      const response = await faucet(body, type);
      assert.equal(response.statusCode, 415, type);
      assert.equal(response.json().error.code, 'unsupported_media_type');
    }
  });

  test("the faucet's refusals have the API's error shape and name the field", async () => {
    const badAmount = await faucet(JSON.stringify({ address: privateKeyToAddress(generatePrivateKey()), usdc: '0' }), 'application/json');
    assert.equal(badAmount.statusCode, 400);
    assert.deepEqual(Object.keys(badAmount.json()), ['error']);
    assert.equal(badAmount.json().error.code, 'invalid_field');
    assert.equal(badAmount.json().error.field, 'usdc');
    const badAddress = await faucet(JSON.stringify({ address: '0x12', usdc: '1' }), 'application/json');
    assert.equal(badAddress.statusCode, 400);
    assert.equal(badAddress.json().error.field, 'address');
    const badHash = await paying.service.app.inject({ method: 'GET', url: '/sandbox/tx/0x12' });
    assert.equal(badHash.statusCode, 400);
    assert.equal(badHash.json().error.field, 'hash');
  });
});
