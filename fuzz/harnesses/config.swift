// securotp.conf and the module's arguments (Settings in SecurOTPStore): the PAM module parses
// both at every login, so a trap here is SIGILL inside sshd or sudo.
//
// Properties: a file that is accepted yields every setting in its documented range and moves
// no file location; reading it twice changes nothing more; a refused file is a configuration
// error naming the file and a line that exists. The same text split into module arguments
// (as PAM splits a stack line) goes through Settings.fromModuleArguments, with conf= and
// state_dir= pointed at a directory that does not exist, so no file is ever read.
import FuzzSupport
@testable import SecurOTPEngine
@testable import SecurOTPStore

private let path = "/fuzz/securotp.conf"
private let missingDirectory = "/nonexistent/securotp-fuzz"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    // Settings.load refuses a file that is not UTF-8 before parsing it.
    guard let text = String(validating: Fuzz.bytes(data, size), as: UTF8.self) else { return 0 }
    checkFile(text)
    checkModuleArguments(text)
    return 0
}

private func checkFile(_ text: String) {
    var settings = Settings()
    do {
        try settings.apply(fileText: text, path: path)
    } catch {
        Fuzz.require(error.code == .config, "file error code \(error.code): \(error.message)")
        // Lines end at a \n byte (a \r\n is one Character to Swift, so no String split here).
        let lineCount = text.utf8.filter { $0 == UInt8(ascii: "\n") }.count + 1
        let line = error.message.dropFirst(path.count + 1).prefix { $0 != ":" }
        Fuzz.require(error.message.hasPrefix(path + ":") && Int(line).map { (1...lineCount).contains($0) } == true,
                     "file error does not name the file and a line: \(error.message)")
        return
    }
    checkRanges(settings, "file")
    Fuzz.require(settings.paths.config == StorePaths().config && settings.paths.stateDirectory == nil,
                 "the file moved the configuration or state directory")
    var again = settings
    do {
        try again.apply(fileText: text, path: path)
    } catch {
        Fuzz.require(false, "an accepted file is refused the second time: \(error.message)")
    }
    Fuzz.require(again == settings, "reading the same file twice gave different settings")
}

private func checkModuleArguments(_ text: String) {
    var arguments = ["state_dir=" + missingDirectory]
    for word in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }) {
        // Location arguments keep their shape (absolute or not) but never name a real file.
        if word.hasPrefix("conf=/") {
            arguments.append("conf=" + missingDirectory + "/securotp.conf")
        } else if word.hasPrefix("state_dir=/") {
            arguments.append("state_dir=" + missingDirectory)
        } else {
            arguments.append(String(word))
        }
    }
    let settings: Settings
    do {
        settings = try Settings.fromModuleArguments(arguments)
    } catch {
        Fuzz.require(error.code == .config && !error.message.isEmpty, "argument error code \(error.code): \(error.message)")
        return
    }
    checkRanges(settings, "arguments")
    Fuzz.require(!(settings.useFirstPass && settings.forwardPass), "use_first_pass and forward_pass both on")
}

private func checkRanges(_ settings: Settings, _ origin: String) {
    let policy = settings.policy
    Fuzz.require((0...10).contains(policy.window), "\(origin): window \(policy.window)")
    Fuzz.require((0...100).contains(policy.hotpLookahead), "\(origin): hotp_lookahead \(policy.hotpLookahead)")
    Fuzz.require((0...1000).contains(policy.resyncWindow), "\(origin): resync_window \(policy.resyncWindow)")
    Fuzz.require((0...100).contains(policy.nextCodeAfter), "\(origin): next_code_after \(policy.nextCodeAfter)")
    Fuzz.require((0...1000).contains(policy.deny), "\(origin): deny \(policy.deny)")
    Fuzz.require((0...31_536_000).contains(policy.unlockTime), "\(origin): unlock_time \(policy.unlockTime)")
    Fuzz.require((1...100).contains(settings.maxTokens), "\(origin): max_tokens \(settings.maxTokens)")
    Fuzz.require(!settings.prompt.isEmpty && settings.prompt.utf8.count <= 201 && settings.prompt.hasSuffix(" "),
                 "\(origin): prompt \"\(settings.prompt)\"")
    Fuzz.require(settings.paths.database.hasPrefix("/") && settings.paths.keyFile.hasPrefix("/"),
                 "\(origin): relative path \(settings.paths.database) or \(settings.paths.keyFile)")
    let rule = settings.groups
    for pattern in rule.include + rule.exclude {
        Fuzz.require(!pattern.isEmpty && !pattern.contains(","), "\(origin): group pattern \"\(pattern)\"")
    }
    Fuzz.require(rule.covers(groups: []) == rule.include.isEmpty, "\(origin): groups= with no groups")
    _ = rule.covers(groups: ["wheel", "users", "sudo", "securotp-fuzz"])
}
