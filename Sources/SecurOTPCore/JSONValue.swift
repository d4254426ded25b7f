/// A JSON value as the PAM module reads a validator's answers (JSONReader). Numbers are kept
/// only as far as the API uses them: whole numbers that fit Int64; any other number parses
/// but carries no value.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// nil: a valid JSON number that is not a whole number in Int64's range.
    case number(Int64?)
    case string(String)
    case array([JSONValue])
    /// Members in document order; keys are unique (the reader refuses duplicates).
    case object([JSONMember])

    /// An object's member; nil for other values and missing keys.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return member.value }
        return nil
    }

    public var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var integer: Int64? {
        if case .number(let value) = self { return value }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    public var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}

public struct JSONMember: Sendable, Equatable {
    public let key: String
    public let value: JSONValue

    public init(key: String, value: JSONValue) {
        self.key = key
        self.value = value
    }
}
