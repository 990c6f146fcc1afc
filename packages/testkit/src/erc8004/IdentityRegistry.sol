// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A minimal ERC-8004 Identity Registry for tests, with the events and the functions of the
/// v2.0.0 registry that Vouch reads or calls: ERC-721-like (sequential agent ids from 0, the
/// ERC-721 `Transfer` event), `Registered`, `URIUpdated`, `MetadataSet`, and the reserved
/// `agentWallet` key — set to the owner at registration, changed only with the new wallet's
/// EIP-712 signature, cleared on transfer. Not a full ERC-721 (no safe transfers, no approvals
/// of single tokens).
contract IdentityRegistry {
    struct MetadataEntry {
        string metadataKey;
        bytes metadataValue;
    }

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event ApprovalForAll(address indexed owner, address indexed operator, bool approved);
    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);
    event MetadataSet(
        uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue
    );
    event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);

    bytes32 private constant WALLET_TYPEHASH =
        keccak256("AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)");
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant WALLET_KEY = keccak256("agentWallet");

    uint256 private _lastId;
    mapping(uint256 => address) private _owners;
    mapping(uint256 => string) private _uris;
    mapping(uint256 => mapping(string => bytes)) private _metadata;
    mapping(address => mapping(address => bool)) private _operators;

    function register() external returns (uint256) {
        return _register("", new MetadataEntry[](0));
    }

    function register(string memory agentURI) external returns (uint256) {
        return _register(agentURI, new MetadataEntry[](0));
    }

    function register(string memory agentURI, MetadataEntry[] memory metadata) external returns (uint256) {
        return _register(agentURI, metadata);
    }

    function _register(string memory agentURI, MetadataEntry[] memory metadata) private returns (uint256 agentId) {
        agentId = _lastId++;
        _owners[agentId] = msg.sender;
        _uris[agentId] = agentURI;
        _metadata[agentId]["agentWallet"] = abi.encodePacked(msg.sender);
        emit Transfer(address(0), msg.sender, agentId);
        emit Registered(agentId, agentURI, msg.sender);
        emit MetadataSet(agentId, "agentWallet", "agentWallet", abi.encodePacked(msg.sender));
        for (uint256 i; i < metadata.length; i++) {
            require(keccak256(bytes(metadata[i].metadataKey)) != WALLET_KEY, "reserved key");
            _metadata[agentId][metadata[i].metadataKey] = metadata[i].metadataValue;
            emit MetadataSet(agentId, metadata[i].metadataKey, metadata[i].metadataKey, metadata[i].metadataValue);
        }
    }

    function ownerOf(uint256 agentId) public view returns (address owner) {
        owner = _owners[agentId];
        require(owner != address(0), "ERC721NonexistentToken");
    }

    function tokenURI(uint256 agentId) external view returns (string memory) {
        ownerOf(agentId);
        return _uris[agentId];
    }

    function isApprovedForAll(address owner, address operator) public view returns (bool) {
        return _operators[owner][operator];
    }

    function setApprovalForAll(address operator, bool approved) external {
        _operators[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function isAuthorizedOrOwner(address spender, uint256 agentId) public view returns (bool) {
        address owner = ownerOf(agentId);
        return spender == owner || _operators[owner][spender];
    }

    function getMetadata(uint256 agentId, string memory metadataKey) external view returns (bytes memory) {
        return _metadata[agentId][metadataKey];
    }

    function setMetadata(uint256 agentId, string memory metadataKey, bytes memory metadataValue) external {
        require(isAuthorizedOrOwner(msg.sender, agentId), "Not authorized");
        require(keccak256(bytes(metadataKey)) != WALLET_KEY, "reserved key");
        _metadata[agentId][metadataKey] = metadataValue;
        emit MetadataSet(agentId, metadataKey, metadataKey, metadataValue);
    }

    function setAgentURI(uint256 agentId, string calldata newURI) external {
        require(isAuthorizedOrOwner(msg.sender, agentId), "Not authorized");
        _uris[agentId] = newURI;
        emit URIUpdated(agentId, newURI, msg.sender);
    }

    function getAgentWallet(uint256 agentId) external view returns (address) {
        return address(bytes20(_metadata[agentId]["agentWallet"]));
    }

    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature) external {
        address owner = ownerOf(agentId);
        require(isAuthorizedOrOwner(msg.sender, agentId), "Not authorized");
        require(newWallet != address(0), "bad wallet");
        require(block.timestamp <= deadline, "expired");
        bytes32 domain = keccak256(
            abi.encode(
                DOMAIN_TYPEHASH,
                keccak256("ERC8004IdentityRegistry"),
                keccak256("1"),
                block.chainid,
                address(this)
            )
        );
        bytes32 digest = keccak256(
            abi.encodePacked("\x19\x01", domain, keccak256(abi.encode(WALLET_TYPEHASH, agentId, newWallet, owner, deadline)))
        );
        require(signature.length == 65, "bad signature");
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        require(ecrecover(digest, v, r, s) == newWallet, "invalid wallet sig");
        _metadata[agentId]["agentWallet"] = abi.encodePacked(newWallet);
        emit MetadataSet(agentId, "agentWallet", "agentWallet", abi.encodePacked(newWallet));
    }

    function unsetAgentWallet(uint256 agentId) external {
        require(isAuthorizedOrOwner(msg.sender, agentId), "Not authorized");
        _metadata[agentId]["agentWallet"] = "";
        emit MetadataSet(agentId, "agentWallet", "agentWallet", "");
    }

    function transferFrom(address from, address to, uint256 agentId) external {
        require(ownerOf(agentId) == from, "not the owner");
        require(isAuthorizedOrOwner(msg.sender, agentId), "Not authorized");
        require(to != address(0), "bad receiver");
        // The wallet was verified for the previous owner: the new one must verify it again.
        _metadata[agentId]["agentWallet"] = "";
        emit MetadataSet(agentId, "agentWallet", "agentWallet", "");
        _owners[agentId] = to;
        emit Transfer(from, to, agentId);
    }

    function getVersion() external pure returns (string memory) {
        return "2.0.0-test";
    }
}
