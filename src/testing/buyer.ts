// What a buyer and the chain show, for tests of the money path: buyers who pay again whenever an
// answer offers a payment, authorizations cancelled on chain, and the token's Transfer logs.
import { type Address, createPublicClient, encodeFunctionData, getAddress, type Hex, http, type LocalAccount, parseAbiItem } from 'viem';
import { sandboxUsdcAbi } from '../sandbox/contracts/artifacts.ts';
import type { SandboxChainControls } from '../sandbox/index.ts';
import type { Authorization } from './payer.ts';
import { pay, signedPayment, type X402Offer, x402Url } from './shop.ts';

export type PayAnswer = { status: number; body: { error?: string; accepts?: Omit<X402Offer, 'value'>[]; paymentId?: string; receipt?: string } };

async function answerOf(response: Response): Promise<PayAnswer> {
  return { status: response.status, body: (await response.json()) as PayAnswer['body'] };
}

/** The payment an answer offers, if any: a 402 whose `accepts` names what to sign. */
export function offeredPayment(answer: PayAnswer): X402Offer | undefined {
  const offer = answer.status === 402 ? answer.body.accepts?.[0] : undefined;
  return offer && { ...offer, value: BigInt(offer.maxAmountRequired) };
}

/**
 * A persistent buyer: asks for the session, and whenever an answer offers a payment signs a new
 * authorization for it and sends it, up to `attempts` proofs. Returns every answer and every
 * authorization signed.
 */
export async function persistentBuyer(
  target: { baseUrl: string; usdcAddress: Address },
  sessionId: string,
  payer: LocalAccount,
  options: { attempts?: number; query?: string; validForSeconds?: bigint } = {},
) {
  const answers: PayAnswer[] = [];
  const signed: { auth: Authorization; signature: Hex; header: string }[] = [];
  let answer = await answerOf(await fetch(x402Url(target.baseUrl, sessionId, options.query ?? '')));
  answers.push(answer);
  for (let attempt = 0; attempt < (options.attempts ?? 3); attempt++) {
    const offer = offeredPayment(answer);
    if (!offer) break;
    const overrides = options.validForSeconds ? { validBefore: BigInt(Math.floor(Date.now() / 1000)) + options.validForSeconds } : {};
    const proof = await signedPayment(payer, target.usdcAddress, offer, overrides);
    signed.push(proof);
    answer = await answerOf(await pay(target.baseUrl, sessionId, proof.header, options.query ?? ''));
    answers.push(answer);
  }
  return { answers, signed, last: answer };
}

/** Sends one proof again (as a client retrying the same request) and reads the answer. */
export async function resend(baseUrl: string, sessionId: string, header: string, query = ''): Promise<PayAnswer> {
  return answerOf(await pay(baseUrl, sessionId, header, query));
}

/** The payer cancels an unused authorization on chain (EIP-3009 cancelAuthorization, relayed by the sandbox). */
export async function cancelAuthorization(chain: Pick<SandboxChainControls, 'relayToToken'>, payer: LocalAccount, usdcAddress: Address, nonce: Hex) {
  const signature = await payer.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: usdcAddress },
    types: {
      CancelAuthorization: [
        { name: 'authorizer', type: 'address' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'CancelAuthorization',
    message: { authorizer: payer.address, nonce },
  });
  return chain.relayToToken(encodeFunctionData({ abi: sandboxUsdcAbi, functionName: 'cancelAuthorization', args: [payer.address, nonce, signature] }));
}

/** Submits a signed authorization on chain ourselves (as anyone may), relayed by the sandbox. */
export function submitAuthorization(chain: Pick<SandboxChainControls, 'relayToToken'>, auth: Authorization, signature: Hex) {
  return chain.relayToToken(
    encodeFunctionData({
      abi: sandboxUsdcAbi,
      functionName: 'transferWithAuthorization',
      args: [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, signature],
    }),
  );
}

const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

/** Every USDC Transfer to `to` (from `from`, when given) on the chain, as the chain's logs tell it. */
export async function transfersOnChain(rpcUrl: string, usdcAddress: Address, filter: { to: string; from?: string }) {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const logs = await client.getLogs({
    address: usdcAddress,
    event: TRANSFER,
    args: { to: getAddress(filter.to), ...(filter.from ? { from: getAddress(filter.from) } : {}) },
    fromBlock: 0n,
    toBlock: 'latest',
  });
  return logs.map((log) => ({ txHash: log.transactionHash, from: log.args.from!, value: log.args.value!, blockNumber: log.blockNumber }));
}
