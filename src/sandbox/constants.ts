import { type Address, keccak256, stringToBytes } from 'viem';

/** The sandbox chain answers as Base mainnet so x402 clients sign exactly what they sign in production. */
export const SANDBOX_CHAIN_ID = 8453;
export const SANDBOX_NETWORK = 'eip155:8453';
export const SANDBOX_NETWORK_V1 = 'base';

/** EIP-712 domain of the token, identical to Circle's USDC on Base. */
export const SANDBOX_USDC_NAME = 'USD Coin';
export const SANDBOX_USDC_VERSION = '2';
export const SANDBOX_USDC_DECIMALS = 6;

/**
 * Sandbox-only keys, derived from public strings on purpose: they hold fake money on a local chain.
 * The minter deploys the token as its very first transaction, which fixes the token's address.
 */
export const SANDBOX_MINTER_PRIVATE_KEY = keccak256(stringToBytes('till sandbox token minter'));
export const SANDBOX_FACILITATOR_PRIVATE_KEY = keccak256(stringToBytes('till sandbox facilitator'));

/**
 * The sandbox token's address: the minter's nonce-0 contract address. Never Base's real USDC
 * (0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913), so a sandbox signature is worthless on mainnet.
 */
export const SANDBOX_USDC_ADDRESS: Address = '0xae47EB9b9c9E6903b1e91C471308F98b5d2C3049';

/** Multicall3's address on Base (and most chains); present on the sandbox chain too. */
export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11';

/** Largest amount one faucet call mints. */
export const SANDBOX_FAUCET_MAX_USDC = 1_000_000n;
