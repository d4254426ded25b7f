import Foundation

/// The validator's time, in Unix seconds, for everything a backend decides by it: expiries of
/// codes, challenges, push requests, sessions and activation codes; locks and `unlock_time`;
/// rates. The wall clock in production; a test passes one it moves, so that expiry and lockout
/// tests move time instead of sleeping or editing rows (docs/design.md "Time").
public struct ServiceClock: Sendable {
    private let read: @Sendable () -> Int64

    public init(_ read: @escaping @Sendable () -> Int64) { self.read = read }

    public func now() -> Int64 { read() }

    public static let wall = ServiceClock { Int64(time(nil)) }
}
