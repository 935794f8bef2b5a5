import { x402Facilitator } from '@x402/core/facilitator';
import type { Network } from '@x402/core/types';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/facilitator';
import type { Abi } from 'viem';
import type { SandboxChain } from './chain.ts';
import { SANDBOX_NETWORK, SANDBOX_NETWORK_V1 } from './constants.ts';

/**
 * The official x402 facilitator (exact scheme, EIP-3009) submitting with the sandbox's funded
 * facilitator account, for Base (`eip155:8453`, and `base` for v1 payloads).
 */
export function createSandboxFacilitator(chain: SandboxChain): x402Facilitator {
  const wallet = chain.facilitatorWallet;
  const signer = toFacilitatorEvmSigner(
    {
      address: wallet.account.address,
      getCode: (args) => wallet.getCode(args),
      readContract: (args) => wallet.readContract({ ...args, abi: args.abi as Abi, args: args.args ?? [] }),
      verifyTypedData: (args) => wallet.verifyTypedData(args as Parameters<typeof wallet.verifyTypedData>[0]),
      writeContract: (args) =>
        chain.sendFromFacilitator(() => wallet.writeContract({ ...args, abi: args.abi as Abi } as Parameters<typeof wallet.writeContract>[0])),
      sendTransaction: (args) => chain.sendFromFacilitator(() => wallet.sendTransaction(args)),
      waitForTransactionReceipt: (args) => wallet.waitForTransactionReceipt(args),
    },
    { confirmationTimeoutMs: 30_000 },
  );
  return (
    new x402Facilitator()
      .register(SANDBOX_NETWORK, new ExactEvmScheme(signer))
      // v1 network names are plain words; the core types only model CAIP-2 ids.
      .registerV1(SANDBOX_NETWORK_V1 as Network, new ExactEvmSchemeV1(signer))
  );
}
