import SecurOTPService
import Testing

/// The decisions both stores run (PushDecisions); PushAPITests check them through each store.
@Suite("Push decisions shared by the stores")
struct PushDecisionsTests {
    static func row(state: String = "pending", expires: Int64 = 1_000, number: String = "492817") -> PushRequestRow {
        PushRequestRow(id: "pr" + String(repeating: "a", count: 32), user: "alice", host: "web1", service: "sshd", remoteAddress: "", tty: "",
                       command: "", nonce: "", number: number, created: 0, expires: expires, state: state, wrongNumbers: 0, device: "",
                       authenticatorData: [], clientDataJSON: [], signature: [], result: "")
    }

    static let device = PushDeviceRow(id: "dv" + String(repeating: "b", count: 16), user: "alice", name: "", aaid: "FFFF#0001", state: "active",
                                      activationExpires: 0, publicKey: [], certificate: "", credentialHash: [], signCounter: 5,
                                      userVerification: true, unlockHash: [], unlockExpires: 0, created: 0, lastUsed: 0)

    static func answer(_ decision: String, number: String = "492817") throws -> PushDecisions.Answer {
        try PushDecisions.Answer(DeviceAnswerRequest(id: row().id, decision: decision, authenticatorData: "AAAA", clientDataJson: "AAAA",
                                                     signature: "AAAA", number: number))
    }

    @Test("deny moves pending to denied and counts a failure only if it moved; fraud also blocks the user's pushes")
    func denyAndFraud() throws {
        for decision in ["deny", "fraud"] {
            guard case .change(let change) = PushDecisions.answer(try Self.answer(decision), row: Self.row(), device: Self.device,
                                                                  requireUserVerification: true, now: 10) else {
                Issue.record("\(decision) must change the request"); continue
            }
            #expect(change.moveTo == "denied" && change.countFailure == .ifMoved && change.blockUser == (decision == "fraud"))
            #expect(change.ifLost?.response.state == "denied" && change.ifLost?.audit == nil)
            #expect(change.audit?.result == (decision == "fraud" ? "fraud" : "denied"))
        }
    }

    @Test("Not pending or expired: the answer changes nothing but the expiry")
    func notPendingOrExpired() throws {
        guard case .respond(let response) = PushDecisions.answer(try Self.answer("deny"), row: Self.row(state: "approved"), device: Self.device,
                                                                 requireUserVerification: true, now: 10) else { Issue.record("must only answer"); return }
        #expect(response.state == "approved")
        guard case .change(let change) = PushDecisions.answer(try Self.answer("deny"), row: Self.row(expires: 10), device: Self.device,
                                                              requireUserVerification: true, now: 10) else { Issue.record("must expire"); return }
        #expect(change.moveTo == "expired" && change.countFailure == .never && change.audit == nil && change.response.state == "expired")
    }

    @Test("A wrong number is counted; the third fails the request, unless another call moved it first")
    func wrongNumbers() throws {
        guard case .countWrongNumber = PushDecisions.answer(try Self.answer("approve", number: "111111"), row: Self.row(), device: Self.device,
                                                            requireUserVerification: true, now: 10) else { Issue.record("must count"); return }
        let second = PushDecisions.afterWrongNumber(count: PushPolicy.wrongNumbersToFail - 1)
        #expect(second.moveTo == nil && second.countFailure == .always && second.response.state == "pending")
        let last = PushDecisions.afterWrongNumber(count: PushPolicy.wrongNumbersToFail)
        #expect(last.moveTo == "failed" && last.countFailure == .always && last.response.state == "failed" && last.ifLost?.response.state == "pending")
    }

    @Test("A signature that does not verify fails the request and counts; the counter must advance")
    func refusedSignatureAndCounter() throws {
        guard case .change(let change) = PushDecisions.answer(try Self.answer("approve"), row: Self.row(), device: Self.device,
                                                              requireUserVerification: true, now: 10) else { Issue.record("must refuse"); return }
        #expect(change.moveTo == "failed" && change.countFailure == .always && change.ifLost == nil && change.audit?.result == "reject")
        #expect(PushDecisions.counterAdvances(0, stored: 0) && PushDecisions.counterAdvances(6, stored: 5))
        #expect(!PushDecisions.counterAdvances(5, stored: 5) && !PushDecisions.counterAdvances(4, stored: 5))
        // 0 after a counter was seen is refused, as FIDO keys' is (SignatureCounter, WebAuthn §6.1.1).
        #expect(!PushDecisions.counterAdvances(0, stored: 5))
        // A stored value no UInt32 holds is corrupt: nothing follows it.
        #expect(!PushDecisions.counterAdvances(UInt32.max, stored: -1) && !PushDecisions.counterAdvances(0, stored: 1 << 40))
    }

    @Test("Opening: fraud block first, then push_limit, then lockout")
    func openRefusals() {
        let policy = PushPolicy()
        let refused = PushRate.Admission.refused(retryAfter: 30), allowed = PushRate.Admission.allowed(countedUntil: 60)
        #expect(PushDecisions.openRefusal(user: "alice", blocked: true, admission: refused, locked: true, policy: policy)?.reason == "pushes blocked (deny --fraud)")
        #expect(PushDecisions.openRefusal(user: "alice", blocked: false, admission: refused, locked: true, policy: policy)?.reason
            == "push_limit \(policy.limit) reached")
        #expect(PushDecisions.openRefusal(user: "alice", blocked: false, admission: allowed, locked: true, policy: policy)?.reason == "user locked")
        #expect(PushDecisions.openRefusal(user: "alice", blocked: false, admission: allowed, locked: false, policy: policy) == nil)
    }

    /// issue 25, item 5: `push_limit` was a latch (only a push success or an admin reset it).
    @Test("push_limit is a rate: a burst of push_limit, then one more each push_limit_interval; refusals do not lengthen the wait")
    func pushLimitIsARate() {
        let rate = PushRate(limit: 3, interval: 60)
        var until: Int64 = 0
        var now: Int64 = 1_000_000
        for _ in 1...3 {
            guard case .allowed(let next) = rate.admit(countedUntil: until, now: now) else { Issue.record("the burst is allowed"); return }
            until = next
        }
        #expect(rate.counted(countedUntil: until, now: now) == 3)
        #expect(rate.admit(countedUntil: until, now: now) == .refused(retryAfter: 60))
        // Refused requests are not counted: the wait stays what it was.
        for _ in 1...100 { _ = rate.admit(countedUntil: until, now: now) }
        now += 59
        #expect(rate.admit(countedUntil: until, now: now) == .refused(retryAfter: 1))
        now += 1
        guard case .allowed(let after) = rate.admit(countedUntil: until, now: now) else { Issue.record("one decayed after 60 s"); return }
        #expect(rate.admit(countedUntil: after, now: now) == .refused(retryAfter: 60))
        // Quiet for limit × interval: the whole burst is back.
        #expect(rate.counted(countedUntil: after, now: now + 180) == 0)
        #expect(rate.admit(countedUntil: after, now: now + 180) == .allowed(countedUntil: now + 240))
        // A cleared count (a successful login stores 0) allows at once.
        #expect(rate.admit(countedUntil: 0, now: now) == .allowed(countedUntil: now + 60))
        #expect(PushRate(limit: 0, interval: 60).admit(countedUntil: 5, now: now) == .allowed(countedUntil: 5), "0: no limit")
    }

    @Test("Never a lockout: whatever was counted, one more request is possible within push_limit_interval")
    func pushLimitNeverLocksOut() {
        for limit in [1, 2, 5, 100, 1000] {
            for interval: Int64 in [30, 60, 3600] {
                let rate = PushRate(limit: limit, interval: interval)
                var until: Int64 = 0
                let now: Int64 = 2_000_000
                // Count as many as the rate takes at `now`, then some refused on top.
                while case .allowed(let next) = rate.admit(countedUntil: until, now: now) { until = next }
                guard case .refused(let wait) = rate.admit(countedUntil: until, now: now) else { Issue.record("full"); return }
                #expect(wait > 0 && wait <= interval, "limit \(limit), interval \(interval): waits \(wait) s")
                #expect(rate.admit(countedUntil: until, now: now + wait) != .refused(retryAfter: 0))
                if case .refused = rate.admit(countedUntil: until, now: now + wait) { Issue.record("still refused after the wait") }
            }
        }
    }

    @Test("An approval is handed out once, and only while its device is the user's and active")
    func handOut() {
        guard case .handOut(let lost) = PushDecisions.status(Self.row(state: "approved"), now: 10) else { Issue.record("must hand out"); return }
        #expect(lost.state == "consumed" && lost.approval == nil)
        #expect(PushDecisions.handOut(Self.row(state: "approved"), device: Self.device).status.approval != nil)
        var blocked = Self.device
        blocked.state = "blocked"
        let refused = PushDecisions.handOut(Self.row(state: "approved"), device: blocked)
        #expect(refused.status.state == "failed" && refused.status.approval == nil && refused.audit?.result == "reject")
        #expect(PushDecisions.handOut(Self.row(state: "approved"), device: nil).status.state == "failed")
    }
}
