// The tools' progress bar (cli.h) driven by an ITK filter's ProgressEvent.
#pragma once

#include <cstddef>

#include "cli.h"
#include "itkCommand.h"
#include "itkProcessObject.h"

namespace tk {

// Runs filter->Update() with a bar labelled `label` on stderr (silent when quiet or not a
// terminal); exceptions from Update() propagate.
inline void update_with_progress(itk::ProcessObject *filter, const char *label, int quiet)
{
    tk_progress bar;
    tk_progress_begin(&bar, label, 1000, quiet);
    auto progress = itk::CStyleCommand::New();
    progress->SetClientData(&bar);
    progress->SetCallback([](itk::Object *caller, const itk::EventObject &, void *data) {
        auto *b = static_cast<tk_progress *>(data);
        size_t done = static_cast<size_t>(static_cast<itk::ProcessObject *>(caller)->GetProgress() * 1000);
        if (done > b->done) tk_progress_advance(b, done - b->done);
    });
    const unsigned long tag = filter->AddObserver(itk::ProgressEvent(), progress);
    try {
        filter->Update();
    } catch (...) {
        filter->RemoveObserver(tag);
        throw;
    }
    filter->RemoveObserver(tag);
    tk_progress_end(&bar);
}

}  // namespace tk
