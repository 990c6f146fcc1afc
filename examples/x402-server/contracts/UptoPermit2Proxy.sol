// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Permit2} from "./Permit2.sol";

/// The `settle` entry point of the x402 `upto` scheme on EVM, with the function, witness and
/// errors the x402 facilitator (the `upto` scheme of the x402 EVM package) calls: the payer signed a Permit2 transfer of at
/// most `permit.permitted.amount` to `witness.to`, to be settled only by `witness.facilitator`;
/// the facilitator settles `amount` of it (what was used), never more. Placed at the x402 upto
/// proxy's canonical address on the local chain; Permit2 is read from its canonical address.
contract UptoPermit2Proxy {
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    Permit2 public constant PERMIT2 = Permit2(0x000000000022D473030F116dDEE9F6B43aC78BA3);
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    event Settled();

    error AmountExceedsPermitted();
    error InvalidDestination();
    error InvalidOwner();
    error PaymentTooEarly();
    error UnauthorizedFacilitator();

    function settle(
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
        bytes32 witnessHash = keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter));
        PERMIT2.permitWitnessTransferFrom(
            permit,
            Permit2.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            witnessHash,
            WITNESS_TYPE_STRING,
            signature
        );
        emit Settled();
    }
}
