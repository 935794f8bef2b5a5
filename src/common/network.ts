/** The chain and token Till takes payment in: USDC on Base (chain id 8453); the sandbox imitates it. */
export const CHAIN_ID = 8453;
/** The network's name in x402 v1 and in the spec's bodies. */
export const NETWORK_V1 = 'base';
/** The same network in x402 v2 (CAIP-2). */
export const NETWORK_V2 = 'eip155:8453';

/** A chain as x402 and wallets name it: its id, its names in x402 v1 and v2, the public RPC a wallet may add. */
export type Network = { name: string; chainId: number; v1: string; v2: `${string}:${string}`; publicRpcUrl: string };

/** Base: live mode's network, and the one the sandbox imitates (same chain id, its own token). */
export const BASE: Network = { name: 'Base', chainId: CHAIN_ID, v1: NETWORK_V1, v2: NETWORK_V2, publicRpcUrl: 'https://mainnet.base.org' };
/** Base Sepolia: a public test network test mode may pay on instead of the sandbox, through a facilitator that settles there. */
export const BASE_SEPOLIA: Network = { name: 'Base Sepolia', chainId: 84532, v1: 'base-sepolia', v2: 'eip155:84532', publicRpcUrl: 'https://sepolia.base.org' };
export const NETWORKS = { base: BASE, 'base-sepolia': BASE_SEPOLIA } as const;
export const TOKEN_SYMBOL = 'USDC';
/** Circle's USDC on Base mainnet: the token live mode takes by default. */
export const BASE_USDC_ADDRESS = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

/** Fixed terms of the only x402 offer Till makes: version 2, the exact scheme (an EIP-3009 authorization), 60 s to pay. */
export const X402_VERSION = 2;
export const SCHEME = 'exact';
export const MAX_TIMEOUT_SECONDS = 60;

/** EIP-712 domain of USDC on Base (and of the sandbox token, which copies it). */
export const USDC_DOMAIN = { name: 'USD Coin', version: '2' } as const;

/** The EIP712Domain type of USDC's domain, which eth_signTypedData_v4 wants listed with the message's types. */
export const EIP712_DOMAIN_TYPE = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
] as const;

/** EIP-712 types of the EIP-3009 TransferWithAuthorization a buyer signs to pay. */
export const TRANSFER_WITH_AUTHORIZATION = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

/** The chains a merchant can accept, each with the tokens that can be accepted on it: today USDC on Base only. */
export const SUPPORTED_CHAINS: Readonly<Record<string, readonly string[]>> = { [NETWORK_V1]: [TOKEN_SYMBOL] };
