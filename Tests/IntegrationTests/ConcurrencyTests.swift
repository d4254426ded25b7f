// Exactly once under a race: two logins started at the same instant with the same code.
import Testing

@Suite("Concurrency: one code, two simultaneous logins")
struct ConcurrencyTests {
    @Test("Over 30 trials, exactly one of two racing logins succeeds each time")
    func racingLoginsAcceptOneCodeOnce() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        // deny=0: the loser's failure must not lock the user and disturb later trials.
        let service = try box.service("race", ["deny=0"])
        let trials = 30

        var badTrials: [String] = []
        for trial in 0..<trials {
            // A fresh counter value each trial: the winner of the previous one moved the counter to `trial`.
            let code = try Oath.hotp(token.secret, counter: UInt64(trial))
            let first = try box.startLogin(service, "root", [code])
            let second = try box.startLogin(service, "root", [code])
            let results = [try first.wait(), try second.wait()]
            let winners = results.filter { $0.status == PAM.success }.count
            let losers = results.filter { $0.status == PAM.authError }
            if winners != 1 || losers.count != 1 {
                badTrials.append("trial \(trial) (counter \(trial)): exit codes \(results.map(\.status)), want one 0 and one 7\n\(results[0])\n\(results[1])")
                if winners == 0 { break } // the counter did not move; later trials would mislead
            } else {
                #expect(losers[0].infos == [PAM.replayInfo], "the loser is told the code was used: \(losers[0])")
            }
        }
        #expect(badTrials.isEmpty, "\(badTrials.count) of \(trials) trials were not one success plus one clean refusal:\n\(badTrials.joined(separator: "\n"))")
        let counter = try box.listTokens("root").first?["counter"] as? Int
        #expect(counter == trials, "each trial consumed exactly one counter value")
    }
}
