import { parseAbi } from 'viem';

/**
 * The events and the one function Vouch uses of the ERC-8004 registries, as v2.0.0 declares them
 * (erc-8004/erc-8004-contracts, `IdentityRegistryUpgradeable.sol` and
 * `ReputationRegistryUpgradeable.sol`, `getVersion()` "2.0.0"): identities are ERC-721 tokens
 * (`Transfer`), and the reserved metadata key `agentWallet` carries the verified wallet
 * (`MetadataSet`, 20 bytes; empty once cleared).
 */
export const identityEvents = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
  'event Registered(uint256 indexed agentId, string agentURI, address indexed owner)',
  'event MetadataSet(uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue)',
  'event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy)',
]);

export const reputationEvents = parseAbi([
  'event NewFeedback(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, int128 value, uint8 valueDecimals, string indexed indexedTag1, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
  'event FeedbackRevoked(uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex)',
  'event ResponseAppended(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, address indexed responder, string responseURI, bytes32 responseHash)',
]);

export const giveFeedbackAbi = parseAbi([
  'function giveFeedback(uint256 agentId, int128 value, uint8 valueDecimals, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
]);
