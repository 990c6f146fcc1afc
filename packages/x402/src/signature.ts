import { authorizationTypes, PERMIT2_ADDRESS, permit2WitnessTypes, uptoPermit2WitnessTypes } from '@x402/evm';
import { type Address, getAddress, type Hex, recoverTypedDataAddress } from 'viem';
import { evmChainId, type PaymentPayloadLike, type RequirementsLike } from './mapping.ts';

/**
 * Whether the payer named in a payload signed it. The before-verify hook runs before the
 * facilitator checks the signature, and a payload's `from` is only a claim until then: without
 * this, anyone could make Vouch decide about — and hold the budget of — an agent they do not
 * control. The typed data are the x402 EVM package's own (@x402/evm `authorizationTypes`,
 * `permit2WitnessTypes`, `uptoPermit2WitnessTypes`, `PERMIT2_ADDRESS`), so what is checked here is
 * what the facilitator checks.
 *
 * Answers `true`/`false` for a 65-byte ECDSA signature of an EOA, and `null` when it cannot be
 * told here: a smart-wallet signature (ERC-1271, ERC-6492) needs the chain — the facilitator
 * checks those.
 */
export async function signedByPayer(
  payload: PaymentPayloadLike,
  requirements: RequirementsLike,
): Promise<boolean | null> {
  const inner = payload.payload as Record<string, unknown>;
  const signature = inner.signature;
  if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]*$/.test(signature)) return false;
  if (signature.length !== 132) return null;
  const chainId = evmChainId(requirements.network);
  if (chainId === null) return false;
  try {
    const auth = inner.authorization as Record<string, string> | undefined;
    if (auth) {
      const extra = (requirements.extra ?? {}) as { name?: unknown; version?: unknown };
      if (typeof extra.name !== 'string' || typeof extra.version !== 'string') return false;
      const signer = await recoverTypedDataAddress({
        domain: {
          name: extra.name,
          version: extra.version,
          chainId,
          verifyingContract: getAddress(requirements.asset),
        },
        types: authorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: {
          from: getAddress(String(auth.from)),
          to: getAddress(String(auth.to)),
          value: BigInt(String(auth.value)),
          validAfter: BigInt(String(auth.validAfter)),
          validBefore: BigInt(String(auth.validBefore)),
          nonce: String(auth.nonce) as Hex,
        },
        signature: signature as Hex,
      });
      return signer.toLowerCase() === String(auth.from).toLowerCase();
    }
    const permit = inner.permit2Authorization as
      | {
          from: string;
          permitted: { token: string; amount: string };
          spender: string;
          nonce: string;
          deadline: string;
          witness: { to: string; validAfter: string; facilitator?: string };
        }
      | undefined;
    if (!permit) return false;
    const common = {
      permitted: { token: getAddress(permit.permitted.token), amount: BigInt(permit.permitted.amount) },
      spender: getAddress(permit.spender),
      nonce: BigInt(permit.nonce),
      deadline: BigInt(permit.deadline),
    };
    const domain = { name: 'Permit2', chainId, verifyingContract: PERMIT2_ADDRESS as Address };
    const signer =
      requirements.scheme === 'upto'
        ? await recoverTypedDataAddress({
            domain,
            types: uptoPermit2WitnessTypes,
            primaryType: 'PermitWitnessTransferFrom',
            message: {
              ...common,
              witness: {
                to: getAddress(permit.witness.to),
                facilitator: getAddress(String(permit.witness.facilitator)),
                validAfter: BigInt(permit.witness.validAfter),
              },
            },
            signature: signature as Hex,
          })
        : await recoverTypedDataAddress({
            domain,
            types: permit2WitnessTypes,
            primaryType: 'PermitWitnessTransferFrom',
            message: {
              ...common,
              witness: { to: getAddress(permit.witness.to), validAfter: BigInt(permit.witness.validAfter) },
            },
            signature: signature as Hex,
          });
    return signer.toLowerCase() === permit.from.toLowerCase();
  } catch {
    return false; // fields that do not parse: not a payment anyone signed
  }
}
